import { pollingTimer } from "../common/timer.mjs";
import { assertOk, valueAt } from "../common/values.mjs";

/** The URL of a page: the cursor itself when it is a URL, else the base URL with the cursor parameter. */
function pageUrl(base, param, cursor) {
  if (cursor === undefined || cursor === null || cursor === "") return base;
  if (typeof cursor === "string" && /^https?:\/\//.test(cursor)) return cursor;
  const u = new URL(base);
  u.searchParams.set(param, String(cursor));
  return u.toString();
}

export default {
  key: "sluice-json-api-poller",
  name: "JSON API Poller",
  description: "Polls a JSON API that pages with a cursor and emits each new item once (deduplicated on its id). The cursor is kept between polls, so each poll continues where the last one stopped.",
  version: "1.0.0",
  type: "source",
  dedupe: "unique",
  props: {
    url: { type: "string", label: "URL", description: "The first page of the list." },
    itemsPath: {
      type: "string",
      label: "Path to the items",
      description: "Dotted path to the array of items in each page (`data`, `result.items`); empty when the page is the array.",
      optional: true,
      default: "items",
    },
    idPath: {
      type: "string",
      label: "Path to an item's id",
      optional: true,
      default: "id",
    },
    cursorPath: {
      type: "string",
      label: "Path to the next cursor",
      description: "Dotted path to the next page's cursor (`next_cursor`, `meta.next`); a full URL there is fetched as it is. Absent, null or empty: the last page.",
      optional: true,
      default: "next_cursor",
    },
    cursorParam: {
      type: "string",
      label: "Cursor query parameter",
      optional: true,
      default: "cursor",
    },
    headers: {
      type: "object",
      label: "Request headers",
      description: "Sent with every request. Put credentials in Authorization below, not here: these are shown back by the API.",
      optional: true,
    },
    authorization: {
      type: "string",
      label: "Authorization header",
      description: "Sent as the `Authorization` header (`Bearer ...`); stored encrypted and never shown back.",
      secret: true,
      optional: true,
    },
    maxPages: {
      type: "integer",
      label: "Pages per poll",
      optional: true,
      default: 10,
      min: 1,
      max: 100,
    },
    timer: pollingTimer(300),
    db: "$.service.db",
  },
  async run() {
    const itemsPath = this.itemsPath ?? "items";
    const idPath = this.idPath ?? "id";
    const cursorPath = this.cursorPath ?? "next_cursor";
    let cursor = this.db.get("cursor");
    for (let page = 0; page < (this.maxPages ?? 10); page++) {
      const url = pageUrl(this.url, this.cursorParam ?? "cursor", cursor);
      const headers = { accept: "application/json", ...(this.headers ?? {}) };
      if (this.authorization) headers.authorization = this.authorization;
      const res = await fetch(url, { headers });
      assertOk(res, url);
      const body = await res.json();
      const items = valueAt(body, itemsPath);
      if (!Array.isArray(items)) throw new Error(`${url}: no array of items at "${itemsPath}"`);
      for (const item of items) {
        const id = valueAt(item, idPath);
        if (id === undefined || id === null) throw new Error(`${url}: an item has no id at "${idPath}"`);
        this.$emit(item, { id: String(id), summary: `Item ${id}` });
      }
      const next = valueAt(body, cursorPath);
      // The cursor of the last page stays stored: the next poll reads that page again for
      // items added to it since (dedupe drops the ones already emitted) and follows on.
      if (next === undefined || next === null || next === "") break;
      cursor = next;
      this.db.set("cursor", cursor);
    }
  },
};
