import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A local feed server that behaves like real RSS 2.0 and Atom servers: https with a self-signed certificate
 * for `localhost` (made with openssl at start; the test trusts it through ServiceOptions.feedTls, so knode's
 * own rule, https only, stays as strict as in production), an ETag and a Last-Modified on every feed, 304
 * when a conditional GET names them, redirects, failures, and a count of what it answered.
 */

export interface FakeItem {
  guid: string;
  title: string;
  link?: string;
  /** A date, as the format wants it written (RFC 822 for RSS, ISO 8601 for Atom). */
  date?: Date;
  html: string;
}

interface FeedRoute {
  format: 'rss' | 'atom';
  items: FakeItem[];
  body: string;
  etag: string;
  lastModified: string;
}

type Route = FeedRoute | { redirect: string; status: number } | { status: number };

export interface FeedServer {
  /** `https://localhost:<port>` */
  readonly origin: string;
  /** The certificate to trust (PEM). */
  readonly ca: string;
  /** Sets (or changes) the feed at `path`: its ETag and Last-Modified change with its content. */
  feed(path: string, format: 'rss' | 'atom', items: FakeItem[]): void;
  redirect(path: string, location: string, status?: number): void;
  fail(path: string, status: number): void;
  /** What each request to `path` was answered, in order (200, 304, 301, ...). */
  answers(path: string): number[];
  stop(): Promise<void>;
}

function makeCertificate(): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'knode-feed-cert-'));
  try {
    const made = Bun.spawnSync([
      'openssl',
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ]);
    if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
    return { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function rssDocument(items: FakeItem[]): string {
  const entries = items
    .map(
      (item) => `<item>
  <title>${escapeXml(item.title)}</title>
  ${item.link ? `<link>${escapeXml(item.link)}</link>` : ''}
  <guid isPermaLink="false">${escapeXml(item.guid)}</guid>
  ${item.date ? `<pubDate>${item.date.toUTCString()}</pubDate>` : ''}
  <description><![CDATA[${item.html}]]></description>
</item>`,
    )
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/">
<channel><title>Fake feed</title><link>https://localhost/</link><description>A feed for tests</description>
${entries}
</channel></rss>`;
}

export function atomDocument(items: FakeItem[]): string {
  const entries = items
    .map(
      (item) => `<entry>
  <title type="text">${escapeXml(item.title)}</title>
  ${item.link ? `<link rel="alternate" href="${escapeXml(item.link)}"/>` : ''}
  <id>${escapeXml(item.guid)}</id>
  ${item.date ? `<updated>${item.date.toISOString()}</updated>` : ''}
  <content type="html">${escapeXml(item.html)}</content>
</entry>`,
    )
    .join('\n');
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Fake feed</title><id>urn:fake</id><updated>2026-01-01T00:00:00Z</updated>
${entries}
</feed>`;
}

export function startFeedServer(): FeedServer {
  const { cert, key } = makeCertificate();
  const routes = new Map<string, Route>();
  const answered = new Map<string, number[]>();
  let changes = 0;
  const answer = (path: string, response: Response) => {
    answered.set(path, [...(answered.get(path) ?? []), response.status]);
    return response;
  };
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    tls: { cert, key },
    fetch(request) {
      const path = new URL(request.url).pathname;
      const route = routes.get(path);
      if (!route) return answer(path, new Response('not found', { status: 404 }));
      if ('redirect' in route) return answer(path, new Response(null, { status: route.status, headers: { location: route.redirect } }));
      if (!('body' in route)) return answer(path, new Response('failing', { status: route.status }));
      const match = request.headers.get('if-none-match');
      const since = request.headers.get('if-modified-since');
      if ((match && match === route.etag) || (!match && since && since === route.lastModified)) {
        return answer(path, new Response(null, { status: 304, headers: { etag: route.etag, 'last-modified': route.lastModified } }));
      }
      const type = route.format === 'rss' ? 'application/rss+xml; charset=utf-8' : 'application/atom+xml; charset=utf-8';
      return answer(
        path,
        new Response(route.body, { headers: { 'content-type': type, etag: route.etag, 'last-modified': route.lastModified } }),
      );
    },
  });
  return {
    origin: `https://localhost:${server.port}`,
    ca: cert,
    feed(path, format, items) {
      const body = format === 'rss' ? rssDocument(items) : atomDocument(items);
      const etag = `"${new Bun.CryptoHasher('sha1').update(body).digest('hex')}"`;
      const lastModified = new Date(Date.UTC(2026, 0, 1) + ++changes * 60_000).toUTCString();
      routes.set(path, { format, items, body, etag, lastModified });
    },
    redirect(path, location, status = 301) {
      routes.set(path, { redirect: location, status });
    },
    fail(path, status) {
      routes.set(path, { status });
    },
    answers: (path) => answered.get(path) ?? [],
    stop: async () => {
      server.stop(true);
    },
  };
}
