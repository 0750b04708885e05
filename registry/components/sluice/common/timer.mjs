// The schedule prop of the polling sources.

/** A timer prop polling every `seconds` unless configured otherwise. */
export function pollingTimer(seconds) {
  return {
    type: "$.interface.timer",
    label: "Polling schedule",
    description: "How often to poll: `{\"intervalSeconds\": n}` or `{\"cron\": \"...\"}`.",
    default: { intervalSeconds: seconds },
  };
}
