/*
 * configs BROKERS TOPIC [KEY=VALUE...]
 *
 * librdkafka's admin AlterConfigs and DescribeConfigs (what confluent-kafka
 * clients call; librdkafka 2.0 has no IncrementalAlterConfigs): with
 * KEY=VALUE pairs, makes them the topic's whole set of dynamic configs and
 * prints "altered ERROR MESSAGE" (ERROR the librdkafka error name,
 * "NO_ERROR" on success); then describes the topic and prints one line per
 * config, "KEY VALUE SOURCE". Exits 0 once every request was answered,
 * whatever the resource's error; 1 when one was not; 2 on bad arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

/* request sends one admin request of kind op and waits for its result. */
static rd_kafka_event_t *request(rd_kafka_t *rk, rd_kafka_admin_op_t op, rd_kafka_ConfigResource_t *res) {
	char errstr[512];
	rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(rk, op);
	rd_kafka_AdminOptions_set_request_timeout(opts, 20000, errstr, sizeof(errstr));
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	if (op == RD_KAFKA_ADMIN_OP_ALTERCONFIGS)
		rd_kafka_AlterConfigs(rk, &res, 1, opts, q);
	else
		rd_kafka_DescribeConfigs(rk, &res, 1, opts, q);
	rd_kafka_AdminOptions_destroy(opts);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	rd_kafka_queue_destroy(q);
	if (!ev) {
		fprintf(stderr, "no result within 30 s\n");
		return NULL;
	}
	if (rd_kafka_event_error(ev)) {
		fprintf(stderr, "%s: %s\n", rd_kafka_err2name(rd_kafka_event_error(ev)), rd_kafka_event_error_string(ev));
		rd_kafka_event_destroy(ev);
		return NULL;
	}
	return ev;
}

int main(int argc, char **argv) {
	char errstr[512];
	if (argc < 3) {
		fprintf(stderr, "usage: %s BROKERS TOPIC [KEY=VALUE...]\n", argv[0]);
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
	int code = 0;
	if (argc > 3) {
		rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, argv[2]);
		for (int i = 3; i < argc; i++) {
			char *eq = strchr(argv[i], '=');
			if (!eq) {
				fprintf(stderr, "want KEY=VALUE, got %s\n", argv[i]);
				return 2;
			}
			*eq = '\0';
			rd_kafka_ConfigResource_set_config(res, argv[i], eq + 1);
		}
		rd_kafka_event_t *ev = request(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS, res);
		rd_kafka_ConfigResource_destroy(res);
		if (!ev) {
			rd_kafka_destroy(rk);
			return 1;
		}
		size_t n;
		const rd_kafka_ConfigResource_t **rs = rd_kafka_AlterConfigs_result_resources(rd_kafka_event_AlterConfigs_result(ev), &n);
		for (size_t i = 0; i < n; i++) {
			const char *msg = rd_kafka_ConfigResource_error_string(rs[i]);
			printf("altered %s %s\n", rd_kafka_err2name(rd_kafka_ConfigResource_error(rs[i])), msg ? msg : "");
		}
		rd_kafka_event_destroy(ev);
	}
	rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, argv[2]);
	rd_kafka_event_t *ev = request(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, res);
	rd_kafka_ConfigResource_destroy(res);
	if (!ev) {
		code = 1;
	} else {
		size_t n, cn;
		const rd_kafka_ConfigResource_t **rs =
		    rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
		for (size_t i = 0; i < n; i++) {
			const rd_kafka_ConfigEntry_t **cs = rd_kafka_ConfigResource_configs(rs[i], &cn);
			for (size_t j = 0; j < cn; j++) {
				const char *v = rd_kafka_ConfigEntry_value(cs[j]);
				printf("%s %s %s\n", rd_kafka_ConfigEntry_name(cs[j]), v ? v : "-",
				       rd_kafka_ConfigSource_name(rd_kafka_ConfigEntry_source(cs[j])));
			}
		}
		rd_kafka_event_destroy(ev);
	}
	rd_kafka_destroy(rk);
	return code;
}
