// Package groupinterop holds the consumer group tests with real clients:
// franz-go's group consumer (cooperative-sticky), sarama's consumer group
// and kcat -G (librdkafka's balanced consumer, cooperative-sticky), against
// mini-kafka's broker over every registered engine, with franz-go's kfake as
// the reference where a scenario allows it.
//
// Scenarios: three consumers in one group read every record exactly once; a
// member killed without LeaveGroup loses its partitions to the others after
// its session timeout; consumers restarted after a broker restart resume
// from the committed offsets. TestChurn and TestSettle take the churn and
// settle measurements that the groups profile of cmd/bench reports in
// results/groups.md, and check only their hard bounds.
//
// The brokers here let members ask for session timeouts down to 1 s
// (broker.Config.Groups), so a killed member is noticed in 2 s rather than
// Kafka's minimum of 6; the scenarios run concurrently (they mostly wait on
// rebalances and timers), which keeps the package to a few seconds.
//
// The package has no code outside its tests.
package groupinterop
