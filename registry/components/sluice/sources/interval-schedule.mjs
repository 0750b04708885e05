export default {
  key: "sluice-interval-schedule",
  name: "Interval Schedule",
  description: "Emits an event every N seconds, with the time it fired.",
  version: "1.0.0",
  type: "source",
  props: {
    timer: {
      type: "$.interface.timer",
      label: "Interval",
      description: "`{\"intervalSeconds\": n}`.",
      default: { intervalSeconds: 60 },
    },
  },
  run(event) {
    const timestamp = event.timestamp ?? Math.floor(Date.now() / 1000);
    this.$emit({ timestamp, interval_seconds: event.interval_seconds ?? null }, {
      summary: `Fired at ${new Date(timestamp * 1000).toISOString()}`,
    });
  },
};
