import { describe, expect, test } from 'bun:test';
import { parseFeed } from '../src/feeds/feed-items.ts';
import { decodeEntities, FeedFormatError, parseXml } from '../src/feeds/feed-xml.ts';

/** The bounded feed reader (src/feeds/feed-xml.ts, feed-items.ts): what it reads and what it never does. */
describe('feed XML', () => {
  test('an entity a DOCTYPE declares is never expanded, nor an external one fetched', () => {
    const xml = `<?xml version="1.0"?>
<!DOCTYPE rss [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> <!ENTITY lol "lol"> ]>
<rss version="2.0"><channel><item><guid>g</guid><title>&xxe;&lol; &amp; &#x41;&#66;</title><description>x</description></item></channel></rss>`;
    const [item] = parseFeed(xml, 'https://example.com/feed');
    expect(item?.title).toBe('&xxe;&lol; & AB');
  });

  test('only the predefined entities and character references are decoded', () => {
    expect(decodeEntities('&lt;p&gt; &quot;a&apos; &nbsp; &#0; &#xD800;')).toBe(`<p> "a' &nbsp; &#0; &#xD800;`);
  });

  test('RSS 2.0: content:encoded wins over description, CDATA kept as HTML, RFC 822 dates read, relative links resolved', () => {
    const xml = `<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel>
<item><title>One</title><link>/posts/1</link><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate>
<description>short</description><content:encoded><![CDATA[<p>The <b>full</b> text</p>]]></content:encoded></item>
</channel></rss>`;
    expect(parseFeed(xml, 'https://example.com/feed.xml')).toEqual([
      {
        key: 'https://example.com/posts/1',
        title: 'One',
        link: 'https://example.com/posts/1',
        publishedAt: '2003-06-10T04:00:00.000Z',
        html: '<p>The <b>full</b> text</p>',
      },
    ]);
  });

  test('Atom: the alternate link, xhtml content as written, a text summary escaped', () => {
    const xml = `<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>urn:1</id><title type="html">A &lt;i&gt;b&lt;/i&gt;</title>
<link rel="self" href="https://example.com/self"/><link href="https://example.com/one"/><updated>2026-02-03T04:05:06Z</updated>
<content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>Hi <em>there</em></p></div></content></entry>
<entry><id>urn:2</id><title>Two</title><summary>1 &lt; 2</summary></entry></feed>`;
    const [one, two] = parseFeed(xml, 'https://example.com/atom');
    expect(one).toMatchObject({ key: 'urn:1', title: 'A b', link: 'https://example.com/one', publishedAt: '2026-02-03T04:05:06.000Z' });
    expect(one?.html).toContain('<p>Hi <em>there</em></p>');
    expect(two).toMatchObject({ key: 'urn:2', title: 'Two', link: null, publishedAt: null, html: '<p>1 &lt; 2</p>' });
  });

  test('what is not a feed, or not well-formed, fails with a reason; a hostile nesting is bounded', () => {
    expect(() => parseFeed('<html><body/></html>', 'https://e.x/')).toThrow(FeedFormatError);
    expect(() => parseXml('<rss><channel></rss>')).toThrow('unexpected </rss>');
    expect(() => parseXml(`${'<a>'.repeat(10_000)}${'</a>'.repeat(10_000)}`)).toThrow('nested deeper');
  });
});
