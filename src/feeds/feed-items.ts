import { child, childText, FeedFormatError, parseXml, type XmlElement } from './feed-xml.ts';

/** One item of a feed as knode keeps it: what answers cite (title, link, date) and its HTML. */
export interface FeedItem {
  /** Its identity across polls: the guid (RSS) or id (Atom), else its link, else its title and date. */
  readonly key: string;
  readonly title: string;
  /** The item's own page (absolute), or null when the feed gives none. */
  readonly link: string | null;
  /** ISO 8601 (UTC), or null when the feed gives no date or one that cannot be read. */
  readonly publishedAt: string | null;
  /** The item's body as HTML (an Atom text body escaped into HTML). */
  readonly html: string;
}

function rssItem(item: XmlElement, feedUrl: string): FeedItem[] {
  const link = absolute(childText(item, 'link'), feedUrl);
  const title = childText(item, 'title') ?? '';
  const publishedAt = isoDate(childText(item, 'pubdate', 'date', 'published', 'updated'));
  // content:encoded is the full text where a feed has both; description is often a summary.
  const html = childText(item, 'encoded') ?? childText(item, 'description') ?? '';
  const key = childText(item, 'guid') ?? link ?? fallbackKey(title, publishedAt);
  return key ? [{ key, title, link, publishedAt, html }] : [];
}

function atomEntry(entry: XmlElement, feedUrl: string): FeedItem[] {
  const links = entry.children.filter((candidate) => candidate.name === 'link');
  const page = links.find((link) => (link.attributes.rel ?? 'alternate') === 'alternate') ?? links[0];
  const link = absolute(page?.attributes.href, feedUrl);
  const title = atomText(child(entry, 'title'), entry) ?? '';
  const publishedAt = isoDate(childText(entry, 'published', 'updated', 'issued', 'modified'));
  const html = atomHtml(child(entry, 'content'), entry) ?? atomHtml(child(entry, 'summary'), entry) ?? '';
  const key = childText(entry, 'id') ?? link ?? fallbackKey(title, publishedAt);
  return key ? [{ key, title, link, publishedAt, html }] : [];
}

/** An Atom text construct as HTML: `html` is escaped HTML (decoded already), `xhtml` its markup, `text` escaped here. */
function atomHtml(element: XmlElement | undefined, entry: XmlElement): string | undefined {
  if (!element) return undefined;
  const type = element.attributes.type ?? 'text';
  if (type === 'xhtml') return xhtmlOf(element, entry);
  const text = element.text.trim();
  if (!text) return undefined;
  return type === 'html' || type === 'text/html' ? text : `<p>${escapeHtml(text)}</p>`;
}

/** An Atom title as plain text (an `html` or `xhtml` title loses its markup). */
function atomText(element: XmlElement | undefined, entry: XmlElement): string | undefined {
  const html = atomHtml(element, entry);
  if (html === undefined) return undefined;
  return (element?.attributes.type ?? 'text') === 'text' ? element?.text.trim() : html.replace(/<[^>]*>/g, '').trim();
}

/** The markup inside an `xhtml` construct, as written in the source (its wrapping <div> included). */
function xhtmlOf(element: XmlElement, entry: XmlElement): string | undefined {
  const source = sourceOf.get(entry);
  const markup = source?.slice(element.innerStart, element.innerEnd).trim();
  return markup || undefined;
}

/** The source text each entry was read from, for its `xhtml` slices. */
const sourceOf = new WeakMap<XmlElement, string>();

/**
 * The items of an RSS 2.0, RSS 1.0 (RDF) or Atom document, in document order. Relative links are resolved
 * against the feed's URL; an item without a key (no guid, link, title or date) is left out.
 */
export function parseFeed(xml: string, feedUrl: string): FeedItem[] {
  const root = parseXml(xml);
  const entries = root.name === 'feed' ? root.children : [];
  for (const entry of entries) sourceOf.set(entry, xml);
  return readFeedItemsFrom(root, feedUrl);
}

function readFeedItemsFrom(root: XmlElement, feedUrl: string): FeedItem[] {
  if (root.name === 'feed') return root.children.filter((entry) => entry.name === 'entry').flatMap((entry) => atomEntry(entry, feedUrl));
  if (root.name === 'rss') {
    const channel = child(root, 'channel');
    if (!channel) throw new FeedFormatError('an RSS document without a <channel>');
    return channel.children.filter((item) => item.name === 'item').flatMap((item) => rssItem(item, feedUrl));
  }
  // RSS 1.0: items are the channel's siblings.
  if (root.name === 'rdf') return root.children.filter((item) => item.name === 'item').flatMap((item) => rssItem(item, feedUrl));
  throw new FeedFormatError(`not an RSS or Atom feed (its root element is <${root.qualified}>)`);
}

function absolute(link: string | undefined, base: string): string | null {
  if (!link) return null;
  try {
    const url = new URL(link, base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.toString() : null;
  } catch {
    return null;
  }
}

/** RFC 822 (RSS) and ISO 8601 (Atom, Dublin Core) dates as ISO 8601 in UTC. */
function isoDate(text: string | undefined): string | null {
  if (!text) return null;
  const time = Date.parse(text);
  return Number.isFinite(time) ? new Date(time).toISOString() : null;
}

function fallbackKey(title: string, publishedAt: string | null): string | null {
  return title || publishedAt ? `${title}|${publishedAt ?? ''}` : null;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
