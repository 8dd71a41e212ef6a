// Package interop holds the real-client interoperability tests: franz-go,
// sarama, kcat (librdkafka) and kafka-python (a Python script under
// testdata, run by Debian's python3) produce to and consume from mini-kafka's
// broker over every registered engine, with every compression codec, and
// across a broker restart. franz-go's in-memory fake cluster (kfake) runs the
// same tests as a reference, so a failure that also happens there is the
// test's, not the broker's. librdkafka's admin DeleteRecords, which no
// Debian binding exposes, and its AlterConfigs and DescribeConfigs run as
// small C programs under testdata.
//
// The package has no code outside its tests; interoptest starts the servers.
package interop
