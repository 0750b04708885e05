export default {
  key: "sluice-end-workflow",
  name: "End Workflow",
  description: "Ends the workflow run here: it is marked exited with the reason, and the later steps are skipped.",
  version: "1.0.0",
  type: "action",
  props: {
    reason: { type: "string", label: "Reason", description: "Shown on the run.", optional: true, default: "ended by an End Workflow step" },
  },
  async run({ $ }) {
    return $.flow.exit(this.reason ?? "ended by an End Workflow step");
  },
};
