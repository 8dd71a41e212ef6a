/*
 * delete_records BROKERS TOPIC PARTITION=OFFSET...
 *
 * librdkafka's admin DeleteRecords (what confluent-kafka clients call):
 * deletes the records of each TOPIC PARTITION before OFFSET (-1: the high
 * watermark) and prints one line per partition, "PARTITION LOW_WATERMARK
 * ERROR", ERROR the librdkafka error name ("NO_ERROR" on success). Exits 0
 * once the request was answered, whatever the partitions' errors; 1 when
 * it was not; 2 on bad arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

int main(int argc, char **argv) {
	char errstr[512];
	if (argc < 4) {
		fprintf(stderr, "usage: %s BROKERS TOPIC PARTITION=OFFSET...\n", argv[0]);
		return 2;
	}
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "%s\n", errstr);
		return 2;
	}
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!rk) {
		fprintf(stderr, "rd_kafka_new: %s\n", errstr);
		return 1;
	}
	rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(argc - 3);
	for (int i = 3; i < argc; i++) {
		int partition;
		long long offset;
		if (sscanf(argv[i], "%d=%lld", &partition, &offset) != 2) {
			fprintf(stderr, "want PARTITION=OFFSET, got %s\n", argv[i]);
			return 2;
		}
		rd_kafka_topic_partition_list_add(offsets, argv[2], partition)->offset = offset;
	}
	rd_kafka_DeleteRecords_t *del = rd_kafka_DeleteRecords_new(offsets);
	rd_kafka_topic_partition_list_destroy(offsets);

	rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETERECORDS);
	rd_kafka_AdminOptions_set_operation_timeout(opts, 10000, errstr, sizeof(errstr));
	rd_kafka_AdminOptions_set_request_timeout(opts, 20000, errstr, sizeof(errstr));
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DeleteRecords(rk, &del, 1, opts, q);
	rd_kafka_DeleteRecords_destroy(del);
	rd_kafka_AdminOptions_destroy(opts);

	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	int code = 0;
	if (!ev) {
		fprintf(stderr, "no DeleteRecords result within 30 s\n");
		code = 1;
	} else if (rd_kafka_event_error(ev)) {
		fprintf(stderr, "DeleteRecords: %s: %s\n", rd_kafka_err2name(rd_kafka_event_error(ev)), rd_kafka_event_error_string(ev));
		code = 1;
	} else {
		const rd_kafka_topic_partition_list_t *res =
		    rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(ev));
		for (int i = 0; i < res->cnt; i++) {
			const rd_kafka_topic_partition_t *p = &res->elems[i];
			printf("%d %lld %s\n", (int)p->partition, (long long)p->offset, rd_kafka_err2name(p->err));
		}
	}
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	return code;
}
