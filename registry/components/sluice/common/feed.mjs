// Reading RSS 2.0, RSS 1.0 (RDF), Atom and JSON Feed documents into one item shape.
import { XMLParser } from "fast-xml-parser@5.12.1";
import { toMillis } from "./values.mjs";

const LIST_PATHS = new Set(["rss.channel.item", "feed.entry", "feed.entry.link", "rdf:RDF.item", "feed.link"]);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@_",
  textNodeName: "#text",
  // Ids and titles stay text: "00123" must not become the number 123.
  parseTagValue: false,
  parseAttributeValue: false,
  isArray: (_name, jpath) => LIST_PATHS.has(jpath),
});

/** The text of a node that may be a string, a number or `{ "#text": ... }` (CDATA, typed Atom text). */
function text(node) {
  if (node === undefined || node === null) return undefined;
  if (typeof node === "string" || typeof node === "number") return String(node).trim();
  if (Array.isArray(node)) return text(node[0]);
  if (typeof node === "object" && node["#text"] !== undefined) return String(node["#text"]).trim();
  return undefined;
}

/** The `href` of Atom links: `rel="alternate"` (or no rel) first. */
function atomLink(links) {
  const list = Array.isArray(links) ? links : links ? [links] : [];
  const preferred = list.find((l) => !l["@_rel"] || l["@_rel"] === "alternate") ?? list[0];
  return preferred ? preferred["@_href"] ?? text(preferred) : undefined;
}

function item(fields) {
  const ts = toMillis(fields.published);
  const id = fields.id || fields.link || fields.title;
  return {
    id,
    title: fields.title ?? null,
    link: fields.link ?? null,
    published: ts === undefined ? null : new Date(ts).toISOString(),
    summary: fields.summary ?? null,
    author: fields.author ?? null,
    ts,
  };
}

function fromJsonFeed(doc) {
  return {
    title: doc.title ?? null,
    link: doc.home_page_url ?? null,
    items: (Array.isArray(doc.items) ? doc.items : []).map((i) => item({
      id: i.id !== undefined ? String(i.id) : undefined,
      title: i.title,
      link: i.url ?? i.external_url,
      published: i.date_published ?? i.date_modified,
      summary: i.summary ?? i.content_text ?? i.content_html,
      author: i.authors?.[0]?.name ?? i.author?.name,
    })),
  };
}

function fromXml(doc) {
  if (doc.rss?.channel) {
    const channel = doc.rss.channel;
    return {
      title: text(channel.title) ?? null,
      link: text(channel.link) ?? null,
      items: (channel.item ?? []).map((i) => item({
        id: text(i.guid), title: text(i.title), link: text(i.link), published: text(i.pubDate) ?? text(i["dc:date"]),
        summary: text(i.description), author: text(i.author) ?? text(i["dc:creator"]),
      })),
    };
  }
  if (doc.feed) {
    const feed = doc.feed;
    return {
      title: text(feed.title) ?? null,
      link: atomLink(feed.link) ?? null,
      items: (feed.entry ?? []).map((e) => item({
        id: text(e.id), title: text(e.title), link: atomLink(e.link), published: text(e.published) ?? text(e.updated),
        summary: text(e.summary) ?? text(e.content), author: text(e.author?.name),
      })),
    };
  }
  if (doc["rdf:RDF"]) {
    const rdf = doc["rdf:RDF"];
    return {
      title: text(rdf.channel?.title) ?? null,
      link: text(rdf.channel?.link) ?? null,
      items: (rdf.item ?? []).map((i) => item({
        id: i["@_rdf:about"], title: text(i.title), link: text(i.link), published: text(i["dc:date"]),
        summary: text(i.description), author: text(i["dc:creator"]),
      })),
    };
  }
  throw new Error("the document is not an RSS, Atom or JSON feed");
}

/**
 * The feed's title, link and items, each `{id, title, link, published, summary, author, ts}`,
 * newest first. The id is the item's guid / id, else its link, else its title.
 */
export function parseFeed(body, contentType = "") {
  const trimmed = body.trimStart();
  let feed;
  if (contentType.includes("json") || trimmed.startsWith("{")) {
    let doc;
    try {
      doc = JSON.parse(trimmed);
    } catch (err) {
      throw new Error(`the feed is not valid JSON: ${err.message}`);
    }
    feed = fromJsonFeed(doc);
  } else {
    feed = fromXml(parser.parse(trimmed));
  }
  const items = feed.items.filter((i) => i.id);
  items.sort((a, b) => (b.ts ?? 0) - (a.ts ?? 0));
  return { ...feed, items };
}

/** Fetches and parses a feed; a non-2xx answer or an unreadable document fails with why. */
export async function fetchFeed(url) {
  const res = await fetch(url, { headers: { accept: "application/rss+xml, application/atom+xml, application/feed+json, application/json, application/xml, text/xml;q=0.9, */*;q=0.5" } });
  if (!res.ok) throw new Error(`${url} answered HTTP ${res.status}`);
  return parseFeed(await res.text(), res.headers.get("content-type") ?? "");
}
