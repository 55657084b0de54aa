import { Database } from 'bun:sqlite';
import { TOKENIZER } from '../tables.ts';

/**
 * The SQLite store's tokenisation, for the PostgreSQL store: the very FTS5 tokenizer (tables.ts, TOKENIZER:
 * Porter stemming over unicode61, case and accents folded) in a private in-memory SQLite database, whose
 * `fts5vocab` instance table lists every token of what is inserted. So both stores index and search the
 * same terms, and BM25 counts the same lengths, by construction rather than by a second implementation of
 * unicode61 and Porter that would drift. (bun:sqlite is part of the runtime; nothing is installed for it.)
 */

/** A term of a chunk with its count in each keyword field. */
interface FieldCounts {
  readonly term: string;
  readonly content: number;
  readonly title: number;
  readonly source: number;
  readonly lead: number;
}

/** A chunk as the keyword index holds it: its length in tokens (all fields) and its terms, sorted. */
export interface TokenizedChunk {
  readonly tokens: number;
  readonly terms: readonly FieldCounts[];
}

export interface KeywordFields {
  readonly content: string;
  readonly title: string;
  readonly source: string;
  readonly lead: string;
}

type Field = Exclude<keyof FieldCounts, 'term'>;

export class Fts5Tokenizer {
  private readonly sqlite = new Database(':memory:');

  constructor() {
    this.sqlite.run(`CREATE VIRTUAL TABLE fields USING fts5(content, title, source, lead, content='', tokenize='${TOKENIZER}')`);
    this.sqlite.run(`CREATE VIRTUAL TABLE field_tokens USING fts5vocab(fields, 'instance')`);
  }

  /** Each chunk's terms with their counts per field, and its length in tokens. */
  chunks(rows: readonly KeywordFields[]): TokenizedChunk[] {
    const insert = this.sqlite.query('INSERT INTO fields (rowid, content, title, source, lead) VALUES (?, ?, ?, ?, ?)');
    this.sqlite.transaction(() => {
      for (const [index, row] of rows.entries()) insert.run(index + 1, row.content, row.title, row.source, row.lead);
    })();
    // The instance table lists the index in its own order: term by term (their bytes' order), and each
    // term's rows in order, so each chunk's terms arrive sorted and counted here without a GROUP BY (which
    // took two thirds of the time, measured). A term met again after another would break that: refused.
    const instances = this.sqlite.query('SELECT doc, term, col FROM field_tokens').values() as [number, string, Field][];
    this.clear();
    const chunks = rows.map(() => ({ tokens: 0, terms: [] as FieldCounts[] }));
    const finished = new Set<string>();
    let current: string | undefined;
    for (const [doc, term, col] of instances) {
      if (term !== current) {
        if (current !== undefined) finished.add(current);
        if (finished.has(term)) throw new Error('fts5vocab listed a term apart from its other instances');
        current = term;
      }
      const chunk = chunks[doc - 1] as { tokens: number; terms: FieldCounts[] };
      chunk.tokens += 1;
      let last = chunk.terms.at(-1) as { -readonly [K in keyof FieldCounts]: FieldCounts[K] } | undefined;
      if (last?.term !== term) {
        last = { term, content: 0, title: 0, source: 0, lead: 0 };
        chunk.terms.push(last);
      }
      last[col] += 1;
    }
    return chunks;
  }

  /** The terms of each word, in order (one for a word the tokenizer keeps whole, as keyword-query.ts's words are). */
  words(words: readonly string[]): string[][] {
    const insert = this.sqlite.query('INSERT INTO fields (rowid, content) VALUES (?, ?)');
    for (const [index, word] of words.entries()) insert.run(index + 1, word);
    const rows = this.sqlite.query('SELECT doc, term FROM field_tokens ORDER BY doc, offset').all() as { doc: number; term: string }[];
    this.clear();
    const terms = words.map(() => [] as string[]);
    for (const { doc, term } of rows) terms[doc - 1]?.push(term);
    return terms;
  }

  close(): void {
    this.sqlite.close();
  }

  private clear(): void {
    this.sqlite.run(`INSERT INTO fields (fields) VALUES ('delete-all')`);
  }
}
