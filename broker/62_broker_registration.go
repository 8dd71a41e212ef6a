package broker

// BrokerRegistration: v0-4 (controller listener)
//
// Behaviour:
//   - A broker process registers with the active controller
//     (node.Lifecycle): its id, incarnation id, listener, rack, log
//     directory and features. The controller decides with
//     cluster.Settings.Register and answers, once the record is committed,
//     with the broker epoch: the metadata offset of the registration, so a
//     later incarnation always gets a higher one.
//   - A registered broker starts fenced; heartbeats unfence it once its
//     metadata has caught up with its registration.
//   - A second process claiming the id of a broker whose session is alive:
//     DUPLICATE_BROKER_REGISTRATION (a restart after SIGTERM, whose
//     registration is shutting down, need not wait). A restart of a broker
//     still registered fences the old incarnation first, moving its
//     leaderships.
//   - KIP-966: a broker back from an unclean shutdown (PreviousBrokerEpoch
//     not its last epoch), or on another log directory, leaves every ELR,
//     unless it acknowledges only what it synced (the durable-acks
//     feature) and is back on the disk it had. Another cluster id:
//     INCONSISTENT_CLUSTER_ID.
//
// Version notes:
//   - v1: IsMigratingZkBroker (always false here); v2: LogDirs;
//     v3: PreviousBrokerEpoch (KIP-966); v4: no field this broker reads.

func init() { registerController(62, 0, 4, handleControllerAPI) }
