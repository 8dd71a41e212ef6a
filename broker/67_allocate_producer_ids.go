package broker

// AllocateProducerIDs: v0 (controller listener)
//
// Behaviour:
//   - A broker asks for a block of producer ids (node.ProducerIDs); the
//     controller commits the next block (cluster.Settings.AllocateProducerIDs,
//     ProducerIDBlock ids) and answers with its first id and length, so ids
//     are unique cluster-wide and never repeat across restarts.
//   - Another epoch than the broker's registration: STALE_BROKER_EPOCH; an
//     unknown broker: BROKER_ID_NOT_REGISTERED.

func init() { registerController(67, 0, 0, handleControllerAPI) }
