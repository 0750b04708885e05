import { fetchFeed } from "../common/feed.mjs";
import { pollingTimer } from "../common/timer.mjs";

export default {
  key: "sluice-feed-poller",
  name: "Feed Poller",
  description: "Polls an RSS, Atom or JSON Feed URL and emits each new item once (deduplicated on its guid, id or link). Emits the latest items when deployed.",
  version: "1.0.0",
  type: "source",
  dedupe: "unique",
  props: {
    url: {
      type: "string",
      label: "Feed URL",
      description: "An RSS 2.0, RSS 1.0, Atom or JSON Feed document.",
    },
    timer: pollingTimer(900),
    db: "$.service.db",
    historyCount: {
      type: "integer",
      label: "Items emitted on deploy",
      description: "How many of the newest items to emit when the source is deployed (0 for none).",
      optional: true,
      default: 10,
      min: 0,
      max: 100,
    },
  },
  methods: {
    emitItems(feed, items) {
      // Oldest first, so the newest item is the last emitted.
      for (const i of [...items].reverse()) {
        const { ts, ...rest } = i;
        this.$emit({ ...rest, feed: { title: feed.title, link: feed.link } }, {
          id: i.id,
          summary: i.title ?? i.link ?? i.id,
          ...(ts === undefined ? {} : { ts }),
        });
      }
    },
  },
  hooks: {
    async deploy() {
      const count = this.historyCount ?? 10;
      const feed = await fetchFeed(this.url);
      this.emitItems(feed, feed.items.slice(0, count));
      // Items already in the feed but older than the history are not news: later polls skip them.
      this.db.set("skipIds", feed.items.slice(count, count + 500).map((i) => i.id));
    },
  },
  async run() {
    const feed = await fetchFeed(this.url);
    const skip = new Set(this.db.get("skipIds") ?? []);
    // The newest 100 only: the unique dedupe remembers the last 100 ids, so an older item could
    // otherwise come back as new on every poll of a long feed.
    this.emitItems(feed, feed.items.slice(0, 100).filter((i) => !skip.has(i.id)));
  },
};
