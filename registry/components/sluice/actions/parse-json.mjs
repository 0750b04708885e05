export default {
  key: "sluice-parse-json",
  name: "Parse JSON",
  description: "Parses a JSON text into a value later steps can read field by field.",
  version: "1.0.0",
  type: "action",
  props: {
    text: { type: "string", label: "JSON text" },
  },
  async run({ $ }) {
    let value;
    try {
      value = JSON.parse(this.text);
    } catch (err) {
      throw new Error(`the text is not valid JSON: ${err.message}`);
    }
    $.export("$summary", `Parsed JSON (${Array.isArray(value) ? "array" : value === null ? "null" : typeof value})`);
    return value;
  },
};
