"""librdkafka's transactions (confluent-kafka-python): a consume-transform-
produce copier that commits its input offsets in each transaction
(send_offsets_to_transaction) and aborts every fourth transaction, then
read_committed and read_uncommitted readers of the output.

Usage: rdkafka_txn.py BOOTSTRAP INPUT OUTPUT RECORDS. The input topic
holds RECORDS records valued 0..RECORDS-1. Each output record's value is
"INPUT_VALUE:TRANSACTION", so a reader can tell an aborted transaction's
copy from a committed one. Prints one JSON object.
"""
import json
import sys
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

bootstrap, topic_in, topic_out, records = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
run = uuid.uuid4().hex[:8]

consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "copier-" + run,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest",
                     "isolation.level": "read_committed"})
consumer.subscribe([topic_in])
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "copier-" + run})
producer.init_transactions(30)

txn, aborted, committed = 0, [], []
copied, abandoned = 0, 0  # input records in committed and in aborted transactions
idle = 0
while copied < records and idle < 15:
    msgs = consumer.consume(250, 1.0)
    if not msgs:
        idle += 1
        continue
    idle = 0
    txn += 1
    producer.begin_transaction()
    for m in msgs:
        if m.error():
            raise KafkaException(m.error())
        producer.produce(topic_out, key=m.key(), value=b"%s:%d" % (m.value(), txn))
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata(), 30)
    if txn % 4 == 0:
        # Sent first: an abort purges what librdkafka has not sent yet, and
        # the aborted records are to be in the log for the readers.
        producer.flush(30)
        producer.abort_transaction(30)
        aborted.append(txn)
        abandoned += len(msgs)
        # Back to what the group committed: the aborted input is copied again.
        for tp in consumer.committed(consumer.assignment(), 30):
            consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))
    else:
        producer.commit_transaction(30)
        committed.append(txn)
        copied += len(msgs)


def read(isolation, want):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": isolation + "-" + run,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": isolation})
    c.subscribe([topic_out])
    values, idle = [], 0
    while len(values) < want and idle < 5:
        msgs = c.consume(1000, 1.0)
        if not msgs:
            idle += 1
            continue
        idle = 0
        values += [m.value().decode() for m in msgs if not m.error()]
    c.close()
    return values


json.dump({"committed_txns": committed, "aborted_txns": aborted,
           "read_committed": read("read_committed", copied),
           "read_uncommitted": read("read_uncommitted", copied + abandoned)}, sys.stdout)
