"""Creates topics with librdkafka's admin client (confluent-kafka-python),
one per line of stdin, on one long-lived client: the client caches the
controller that Metadata names, as a user's program would.

argv[1] are the bootstrap servers; each stdin line is a topic name; each
answer is one stdout line: "ok NAME SECONDS attempts=N" or "error NAME SECONDS REASON".
"""
import sys
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

admin = AdminClient({"bootstrap.servers": sys.argv[1]})
for line in sys.stdin:
    name = line.strip()
    if not name:
        continue
    start = time.monotonic()
    # A request the client wrote to a connection that had just died fails
    # at once with _TRANSPORT (librdkafka does not retry admin requests);
    # a user's program tries again, and so does this one, up to 3 times.
    # A retry that finds the topic means the first attempt did reach it.
    for attempt in range(4):
        try:
            fs = admin.create_topics([NewTopic(name, 1, 2)], request_timeout=10, operation_timeout=10)
            fs[name].result(timeout=30)
            print("ok", name, "%.3f" % (time.monotonic() - start), "attempts=%d" % (attempt + 1), flush=True)
            break
        except KafkaException as e:
            err = e.args[0]
            if attempt > 0 and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                print("ok", name, "%.3f" % (time.monotonic() - start), "attempts=%d" % (attempt + 1), flush=True)
                break
            if attempt < 3 and err.code() == KafkaError._TRANSPORT:
                continue
            print("error", name, "%.3f" % (time.monotonic() - start), str(e).replace("\n", " "), flush=True)
            break
        except Exception as e:  # a timeout of the future
            print("error", name, "%.3f" % (time.monotonic() - start), str(e).replace("\n", " "), flush=True)
            break
