export default {
  key: "sluice-stringify-json",
  name: "Stringify JSON",
  description: "Turns a value (an object, an array, a reference to an earlier step) into JSON text.",
  version: "1.0.0",
  type: "action",
  props: {
    value: { type: "any", label: "Value" },
    indent: {
      type: "integer",
      label: "Indentation",
      description: "Spaces per level; 0 for one line.",
      optional: true,
      default: 0,
      min: 0,
      max: 10,
    },
  },
  async run({ $ }) {
    const text = JSON.stringify(this.value ?? null, null, this.indent ?? 0);
    $.export("$summary", `Stringified ${text.length} characters of JSON`);
    return text;
  },
};
