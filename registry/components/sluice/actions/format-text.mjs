import { slugify, titleCase } from "../common/text.mjs";

const OPERATIONS = {
  upper: (t) => t.toUpperCase(),
  lower: (t) => t.toLowerCase(),
  title: titleCase,
  trim: (t) => t.trim(),
  collapse_whitespace: (t) => t.replace(/\s+/g, " ").trim(),
  slugify,
  truncate: (t, max) => (t.length > max ? `${t.slice(0, Math.max(0, max - 1))}…` : t),
};

export default {
  key: "sluice-format-text",
  name: "Format Text",
  description: "Changes the case of a text, trims it, collapses its whitespace, turns it into a URL slug or truncates it.",
  version: "1.0.0",
  type: "action",
  props: {
    text: { type: "string", label: "Text" },
    operation: {
      type: "string",
      label: "Operation",
      options: [
        { label: "UPPER CASE", value: "upper" },
        { label: "lower case", value: "lower" },
        { label: "Title Case", value: "title" },
        { label: "Trim spaces at both ends", value: "trim" },
        { label: "Collapse whitespace", value: "collapse_whitespace" },
        { label: "URL slug", value: "slugify" },
        { label: "Truncate", value: "truncate" },
      ],
    },
    maxLength: {
      type: "integer",
      label: "Maximum length",
      description: "For Truncate: the longest result, an ellipsis included.",
      optional: true,
      default: 100,
      min: 1,
    },
  },
  async run({ $ }) {
    const result = OPERATIONS[this.operation](this.text, this.maxLength ?? 100);
    $.export("$summary", `Formatted text (${this.operation})`);
    return result;
  },
};
