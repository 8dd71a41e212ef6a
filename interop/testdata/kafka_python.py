"""Drives kafka-python (Debian's python3-kafka) for interop/kafkapython_test.go.

Reads one JSON job on stdin and writes one JSON result on stdout, so that a
single interpreter start serves every codec of a test:

  job:    {"bootstrap": "host:port",
           "produce": [{"topic": T, "codec": C, "records": [{"k": hex, "v": hex}]}],
           "consume": [{"topic": T, "n": N, "group": G or null}]}
  result: {"broker_version": [a, b, c],
           "produced": {T: [{"p": partition, "o": offset}] in input order},
           "consumed": {T: [{"p": .., "o": .., "k": hex, "v": hex}]}}

A consume with a group subscribes, reads N records, commits them and leaves
the group. Any failure exits non-zero with the reason on stderr.
"""
import binascii
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer

TIMEOUT_S = 60


def produce(bootstrap, job):
    codec = None if job["codec"] == "none" else job["codec"]
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=codec,
                      linger_ms=5, retries=5)
    try:
        futures = [p.send(job["topic"], key=binascii.unhexlify(r["k"]), value=binascii.unhexlify(r["v"]))
                   for r in job["records"]]
        p.flush(timeout=TIMEOUT_S)
        out = []
        for f in futures:
            md = f.get(timeout=TIMEOUT_S)
            out.append({"p": md.partition, "o": md.offset})
        return out
    finally:
        p.close(timeout=10)


def consume(bootstrap, job):
    c = KafkaConsumer(job["topic"], bootstrap_servers=bootstrap, group_id=job.get("group"),
                      auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        out, deadline = [], time.monotonic() + TIMEOUT_S
        while len(out) < job["n"]:
            if time.monotonic() > deadline:
                raise SystemExit("consumed %d of %d records of %s" % (len(out), job["n"], job["topic"]))
            for recs in c.poll(timeout_ms=500).values():
                for r in recs:
                    out.append({"p": r.partition, "o": r.offset,
                                "k": binascii.hexlify(r.key or b"").decode(),
                                "v": binascii.hexlify(r.value or b"").decode()})
        if job.get("group"):
            c.commit()
        return out
    finally:
        c.close()


def main():
    job = json.load(sys.stdin)
    bootstrap = job["bootstrap"]
    result = {"produced": {}, "consumed": {}}
    for pj in job.get("produce", []):
        result["produced"][pj["topic"]] = produce(bootstrap, pj)
    for cj in job.get("consume", []):
        result["consumed"][cj["topic"]] = consume(bootstrap, cj)
    probe = KafkaConsumer(bootstrap_servers=bootstrap)
    result["broker_version"] = list(probe.config["api_version"])
    probe.close()
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
