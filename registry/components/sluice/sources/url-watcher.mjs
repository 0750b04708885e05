import { pollingTimer } from "../common/timer.mjs";
import { assertOk, sha256Hex, truncated } from "../common/values.mjs";

const MAX_BODY_CHARS = 16 * 1024;

export default {
  key: "sluice-url-watcher",
  name: "URL Watcher",
  description: "Fetches a URL on a schedule and emits an event when its body changes (compared by SHA-256). The body seen at deploy is the starting point; an error answer fails the poll instead of counting as a change.",
  version: "1.0.0",
  type: "source",
  props: {
    url: { type: "string", label: "URL", description: "The page or document to watch." },
    timer: pollingTimer(300),
    db: "$.service.db",
  },
  methods: {
    async snapshot() {
      const res = await fetch(this.url);
      assertOk(res, this.url);
      const body = await res.text();
      return { status: res.status, contentType: res.headers.get("content-type"), body, hash: await sha256Hex(body) };
    },
  },
  hooks: {
    async deploy() {
      const seen = await this.snapshot();
      this.db.set("hash", seen.hash);
    },
  },
  async run() {
    const seen = await this.snapshot();
    const previousHash = this.db.get("hash");
    if (seen.hash === previousHash) return;
    this.db.set("hash", seen.hash);
    const body = truncated(seen.body, MAX_BODY_CHARS);
    const changedAt = Date.now();
    this.$emit({
      url: this.url,
      status: seen.status,
      contentType: seen.contentType,
      hash: seen.hash,
      previousHash: previousHash ?? null,
      body: body.text,
      bodyTruncated: body.truncated,
      changedAt: new Date(changedAt).toISOString(),
    }, { id: `${seen.hash}-${changedAt}`, summary: `${this.url} changed`, ts: changedAt });
  },
};
