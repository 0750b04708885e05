// Text helpers of the Format Text action.

/** Lower-case words of letters and digits joined by dashes, accents removed. */
export function slugify(text) {
  return text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
}

/** Every word with its first letter upper-case and the rest lower-case. */
export function titleCase(text) {
  return text.toLowerCase().replace(/(^|[\s\-_/])(\p{L})/gu, (_m, sep, ch) => sep + ch.toUpperCase());
}
