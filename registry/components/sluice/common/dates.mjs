// Date reading and writing of the Format Date action (Intl, no package).

/** Epoch ms of an ISO / RFC 2822 date or of epoch seconds (up to 11 digits) or milliseconds; throws on anything else. */
export function parseDate(input) {
  const text = String(input).trim();
  if (/^-?\d+$/.test(text)) {
    const n = Number(text);
    return text.replace("-", "").length <= 11 ? n * 1000 : n;
  }
  const ms = Date.parse(text);
  if (!Number.isFinite(ms)) throw new Error(`"${text}" is not a date this action can read`);
  return ms;
}

/** The parts of an instant in a time zone: year, month, day, hour, minute, second (two digits each, year four). */
function partsIn(ms, timeZone) {
  let fmt;
  try {
    fmt = new Intl.DateTimeFormat("en-GB", {
      timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
    });
  } catch {
    throw new Error(`"${timeZone}" is not a time zone`);
  }
  const parts = Object.fromEntries(fmt.formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
  return parts;
}

/** `ms` written as `format` (see the action's options) in `timeZone`. */
export function formatDate(ms, format, timeZone) {
  const d = new Date(ms);
  switch (format) {
    case "iso": return d.toISOString();
    case "epoch_ms": return ms;
    case "epoch_s": return Math.floor(ms / 1000);
    case "http": return d.toUTCString();
    default: {
      const p = partsIn(ms, timeZone);
      const date = `${p.year}-${p.month}-${p.day}`;
      const time = `${p.hour}:${p.minute}:${p.second}`;
      if (format === "date") return date;
      if (format === "time") return time;
      if (format === "datetime") return `${date} ${time}`;
      throw new Error(`unknown format "${format}"`);
    }
  }
}
