import { escapeHtml } from './feed-items.ts';

/**
 * What a feed item is indexed as: one small HTML document (its title in <title>, its body as the body), parsed
 * by the HTML parser on a parse thread like any .html file, and the metadata its chunks carry so that answers
 * cite it (API-CONTRACT 5). Its link and date are in the document's head too: they change its bytes, hence its
 * hash, so an item whose date alone was edited is indexed again and its chunks carry the new date.
 */

/** The file name the parser is chosen by. */
export const ITEM_DOCUMENT_NAME = 'item.html';

export interface ItemFields {
  readonly title: string;
  readonly link: string | null;
  readonly publishedAt: string | null;
  readonly html: string;
}

export function itemDocument(item: ItemFields): string {
  const head = [
    '<meta charset="utf-8">',
    `<title>${escapeHtml(item.title)}</title>`,
    item.link ? `<link rel="canonical" href="${escapeHtml(item.link)}">` : '',
    item.publishedAt ? `<meta name="date" content="${item.publishedAt}">` : '',
  ].join('');
  return `<!doctype html><html><head>${head}</head><body>${item.html}</body></html>`;
}

/** The metadata an item's chunks carry: `source` is the item's link (the feed's URL when it has none). */
export function itemMetadata(item: ItemFields & { readonly feedUrl: string }): Record<string, string> {
  return {
    source: item.link ?? item.feedUrl,
    file_type: 'rss',
    feed: item.feedUrl,
    ...(item.title ? { title: item.title } : {}),
    ...(item.link ? { url: item.link } : {}),
    ...(item.publishedAt ? { published_at: item.publishedAt } : {}),
  };
}
