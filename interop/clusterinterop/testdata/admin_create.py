"""Creates topics with librdkafka's admin client (confluent-kafka-python),
one per line of stdin, on one long-lived client: the client caches the
controller that Metadata names, as a user's program would.

argv[1] are the bootstrap servers; each stdin line is a topic name; each
answer is one stdout line: "ok NAME SECONDS" or "error NAME SECONDS REASON".
"""
import sys
import time

from confluent_kafka.admin import AdminClient, NewTopic

admin = AdminClient({"bootstrap.servers": sys.argv[1]})
for line in sys.stdin:
    name = line.strip()
    if not name:
        continue
    start = time.monotonic()
    try:
        fs = admin.create_topics([NewTopic(name, 1, 2)], request_timeout=10, operation_timeout=10)
        fs[name].result(timeout=30)
        print("ok", name, "%.3f" % (time.monotonic() - start), flush=True)
    except Exception as e:  # the client's KafkaException, or a timeout
        print("error", name, "%.3f" % (time.monotonic() - start), str(e).replace("\n", " "), flush=True)
