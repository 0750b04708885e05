import { formatDate, parseDate } from "../common/dates.mjs";

export default {
  key: "sluice-format-date",
  name: "Format Date",
  description: "Reads a date (ISO 8601, RFC 2822, or epoch seconds or milliseconds), optionally shifts it, and writes it in the format and time zone you choose.",
  version: "1.0.0",
  type: "action",
  props: {
    date: { type: "string", label: "Date", description: "`2026-11-23T14:00:00Z`, `Mon, 23 Nov 2026 14:00:00 GMT`, `1795442400` or `1795442400000`." },
    format: {
      type: "string",
      label: "Output format",
      options: [
        { label: "ISO 8601 in UTC (2026-11-23T14:00:00.000Z)", value: "iso" },
        { label: "Epoch milliseconds", value: "epoch_ms" },
        { label: "Epoch seconds", value: "epoch_s" },
        { label: "Date (2026-11-23)", value: "date" },
        { label: "Time (14:00:00)", value: "time" },
        { label: "Date and time (2026-11-23 14:00:00)", value: "datetime" },
        { label: "HTTP date (Mon, 23 Nov 2026 14:00:00 GMT)", value: "http" },
      ],
    },
    timezone: {
      type: "string",
      label: "Time zone",
      description: "IANA name for Date, Time and Date and time (`Europe/Paris`).",
      optional: true,
      default: "UTC",
    },
    addSeconds: {
      type: "integer",
      label: "Seconds to add",
      description: "Negative to go back in time.",
      optional: true,
      default: 0,
    },
  },
  async run({ $ }) {
    const ms = parseDate(this.date) + (this.addSeconds ?? 0) * 1000;
    const out = formatDate(ms, this.format, this.timezone ?? "UTC");
    $.export("$summary", `Formatted ${this.date} as ${this.format}`);
    return out;
  },
};
