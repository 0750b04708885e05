export default {
  key: "sluice-cron-schedule",
  name: "Cron Schedule",
  description: "Emits an event on a cron schedule (5 fields, or 6 with seconds) in a time zone of your choice.",
  version: "1.0.0",
  type: "source",
  props: {
    timer: {
      type: "$.interface.timer",
      label: "Schedule",
      description: "`{\"cron\": \"0 9 * * 1-5\", \"timezone\": \"Europe/Paris\"}`.",
      default: { cron: "0 * * * *" },
    },
  },
  run(event) {
    const timestamp = event.timestamp ?? Math.floor(Date.now() / 1000);
    this.$emit({ timestamp, cron: event.cron ?? null }, {
      summary: `Fired at ${new Date(timestamp * 1000).toISOString()}`,
    });
  },
};
