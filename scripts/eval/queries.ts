/**
 * The labelled queries, generated from the corpus so that they follow it wherever it is rebuilt.
 *
 * Known-item queries are what a user types to find one document again, in four styles:
 * - `title`: a question on the document's topic (a node's heading, a function of the Node.js reference,
 *   one package's short description), e.g. "which command can print prime factors";
 * - `question`: a few words the document uses again and again but that are not rare in the corpus, in a
 *   question frame: "how to compare fields ignoring blanks in sort";
 * - `term`: a question on a term the rest of the corpus hardly uses: "what is okdir in find?";
 * - `keywords`: such terms with a word used beside them and the topic, as typed into a search box.
 * Each query is kept only if its answer is in one document: the words it shares with its document are,
 * all together, in no other document. Then about half of its everyday words are swapped for a synonym
 * ("directory" -> "folder", "lines" -> "rows"), so it shares only part of the document's vocabulary,
 * and half of the questions get the words people wrap a question to a chat endpoint in ("hi, ...
 * thanks!"). Queries are never sentences of the document.
 *
 * Unanswerable questions come from unanswerable.ts, kept when none of their topic words is frequent
 * in the corpus and no document holds half of them.
 */
import type { Section, SourceDocument } from './sources.ts';
import { SYNONYMS } from './synonyms.ts';
import { contentWords, STOPWORDS, words } from './text.ts';
import { EVERYDAY_QUESTIONS, TECHNICAL_QUESTIONS } from './unanswerable.ts';

export type QueryStyle = 'title' | 'question' | 'term' | 'keywords';

export interface KnownItemQuery {
  query: string;
  style: QueryStyle;
  /** The one relevant document: its path relative to the corpus folder (results' `metadata.source`). */
  relevant: string;
}

export interface CorpusDocument {
  document: SourceDocument;
  path: string;
}

/** A term is distinctive when at most this many documents of the corpus use it... */
const ANCHOR_MAX_DF = 3;
/**
 * ...and at most this many of all the documents sources.ts reads (about 1,200): a word of everyday
 * English ("highest", "unlikely") is rare in 400 documents but not in 1,200, a program's term stays rare.
 */
const ANCHOR_MAX_BACKGROUND_DF = 8;

/** A crude suffix stripper, enough to treat "sorting", "sorted" and "sorts" as one word when counting. */
export function stem(word: string): string {
  if (word.length <= 4) return word;
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.endsWith('ing') && word.length > 5) return word.slice(0, -3);
  if (word.endsWith('ed')) return word.slice(0, -2);
  if (/(ss|x|z|ch|sh)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

function stemsOfDocument(document: SourceDocument): Set<string> {
  const text = [document.title, ...document.sections.flatMap((section) => [section.heading ?? '', ...section.paragraphs])].join(' ');
  return new Set(words(text).map(stem));
}

class CorpusIndex {
  readonly stemsOf = new Map<string, Set<string>>();
  readonly df = new Map<string, number>();
  readonly backgroundDf = new Map<string, number>();

  constructor(
    readonly documents: readonly CorpusDocument[],
    background: readonly SourceDocument[] = [],
  ) {
    for (const { document, path } of documents) {
      const stems = stemsOfDocument(document);
      this.stemsOf.set(path, stems);
      for (const s of stems) this.df.set(s, (this.df.get(s) ?? 0) + 1);
    }
    for (const document of background)
      for (const s of stemsOfDocument(document)) this.backgroundDf.set(s, (this.backgroundDf.get(s) ?? 0) + 1);
  }

  documentFrequency(word: string): number {
    return this.df.get(stem(word)) ?? 0;
  }

  isAnchor(word: string): boolean {
    const df = this.documentFrequency(word);
    const backgroundDf = this.backgroundDf.get(stem(word)) ?? 0;
    return (
      df >= 1 && df <= ANCHOR_MAX_DF && backgroundDf <= ANCHOR_MAX_BACKGROUND_DF && /^[a-z][a-z0-9]{3,}$/.test(word) && !STOPWORDS.has(word)
    );
  }

  /**
   * Whether `query` finds `path` and only it: at least half of its content words are in the document,
   * at least two, and those shared words are not all in any other document.
   */
  answeredOnlyBy(query: string, path: string): boolean {
    const own = this.stemsOf.get(path);
    if (!own) return false;
    const stems = [...new Set(contentWords(query).map(stem))];
    const shared = stems.filter((s) => own.has(s));
    if (shared.length < 2 || shared.length * 2 < stems.length) return false;
    for (const [other, otherStems] of this.stemsOf) {
      if (other !== path && shared.every((s) => otherStems.has(s))) return false;
    }
    return true;
  }
}

// ------------------------------------------------------------------------------------ known items

// Frames of a question about a distinctive term {a} of the document, a word {r} used near it and the
// document's topic {t} (its command, module, package or manual), as people ask them.
const TERM_FRAMES = [
  'what is {a} in {t}?',
  'how does {a} work in {t}',
  'how do I use {a} with {r}?',
  'what does {r} {a} mean?',
  'when should I use {a}?',
  '{t} {a} {r} example',
  'explain {r} {a} in {t}',
  '{a} and {r}?',
  'how to {r} {a}',
  '{t}: how to {r} {a}?',
  'can {t} {r} {a}?',
  'question about {a} {r}',
  '{r} {a} not working',
  'where is {a} documented',
];

const TOPIC_FRAMES = [
  '{}',
  'how does {} work?',
  'what is {}?',
  '{} explained',
  'tell me about {}',
  'where is {} documented?',
  'info on {}',
];

export type Random = () => number;

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

export function shuffle<T>(random: Random, items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

function frame(random: Random, frames: readonly string[], body: string): string {
  return pick(random, frames).replace('{}', body);
}

/**
 * Swaps words for a user's own (SYNONYMS), each with probability `share`: the query then shares only
 * part of its document's vocabulary, as questions of people who have not read the document do.
 */
function paraphrase(random: Random, query: string, share: number): string {
  // Words only: never a piece of an identifier such as Buffer.from or O_NOFOLLOW.
  return query.replace(/(?<![\w.])[a-z]+(?![\w.(])/gi, (word) => {
    const synonym = SYNONYMS[word.toLowerCase()];
    return synonym && random() < share ? synonym : word;
  });
}

// What people add around a question sent to a chat endpoint: more words that every document may use.
const OPENINGS = [
  'hi, ',
  'quick question: ',
  "I'm new to this. ",
  'can you tell me ',
  'I would like to know ',
  'could you explain ',
  'please help: ',
];
// Sentences follow a full stop; phrases continue the question.
const CLOSINGS = [
  '. thanks!',
  '. I could not find it in the docs.',
  '. what is the recommended way?',
  '. any examples?',
  '. it keeps failing on my machine.',
  ' on debian',
  ' from the command line',
];

/** Half of the questions (never keyword queries) get an opening, a closing or both. */
function converse(random: Random, query: string, style: QueryStyle): string {
  if (style === 'keywords' || random() < 0.5) return query;
  const roll = random();
  const opening = roll < 0.67 ? pick(random, OPENINGS) : '';
  const closing = roll >= 0.33 ? pick(random, CLOSINGS) : '';
  // A question that already ends with "?" needs no full stop before the next sentence.
  const joined = closing.startsWith('.') && /[?!.]$/.test(query) ? `${query}${closing.slice(1)}` : `${query}${closing}`;
  return `${opening}${joined}`;
}

/** How much of a query is paraphrased: keywords are typed as the user saw them. */
const PARAPHRASE_SHARE: Readonly<Record<QueryStyle, number>> = { title: 0.5, question: 0.6, term: 0.5, keywords: 0 };

// Manuals whose name is not what people call the program.
const MANUAL_TOPICS: Readonly<Record<string, string>> = {
  gnupg: 'gpg',
  'find-maint': 'findutils',
  rluserman: 'readline',
  gpgrt: 'libgpg-error',
};

/** What a user names the document's subject by: a command, a Node.js module, a package, a licence. */
function topicOf(document: SourceDocument, section: Section): string {
  const title = document.title.replace(/['"`]/g, '').replace(/\s*\([^)]*\)/g, '');
  switch (document.kind) {
    case 'manual': {
      const manual = /^info (\S+):/.exec(document.origin)?.[1] ?? '';
      const command = /^(\S+): /.exec(title)?.[1] ?? /^(?:invoking (?:the )?(\S+)|(\S+) invocation)/i.exec(title)?.slice(1).find(Boolean);
      if (command) return command;
      return manual === 'coreutils' ? (contentWords(title)[0] ?? 'coreutils') : (MANUAL_TOPICS[manual] ?? manual);
    }
    case 'nodejs':
      return `node ${title.split(':')[0]?.toLowerCase() ?? ''}`;
    case 'packages':
      return section.heading?.split(':')[0] ?? 'debian';
    case 'readme':
      return /^\/usr\/share\/doc\/([^/]+)/.exec(document.origin)?.[1] ?? '';
    case 'licence':
      return `${/([^/]+)$/.exec(document.origin)?.[1]?.replace(/-/g, ' ') ?? ''} licence`;
  }
}

interface Passage {
  section: Section;
  sentence: string;
}

function passagesOf(document: SourceDocument): Passage[] {
  return document.sections.flatMap((section) =>
    section.paragraphs.flatMap((paragraph) => paragraph.split(/(?<=[.!?:])\s+/).map((sentence) => ({ section, sentence }))),
  );
}

/**
 * Terms a user could know the document by: used by at most ANCHOR_MAX_DF documents, and more than once
 * in this one or in a heading (a word used once in passing, such as "nonetheless", is no one's query).
 */
function anchorsOf(index: CorpusIndex, document: SourceDocument): string[] {
  const counts = wordCounts(document);
  const headings = new Set(words([document.title, ...document.sections.map((section) => section.heading ?? '')].join(' ')));
  return [...new Set([...counts.keys(), ...headings])]
    .filter((word) => index.isAnchor(word) && ((counts.get(word) ?? 0) >= 2 || headings.has(word)))
    .sort();
}

/** A question on a distinctive term and a word used beside it, or the same as keywords. */
function termQuery(index: CorpusIndex, document: SourceDocument, random: Random, style: 'term' | 'keywords'): string | undefined {
  const anchors = anchorsOf(index, document);
  if (anchors.length === 0) return undefined;
  const anchor = pick(random, anchors);
  const passages = passagesOf(document).filter((passage) => words(passage.sentence).includes(anchor));
  const passage = passages.length > 0 ? pick(random, passages) : { section: document.sections[0] as Section, sentence: '' };
  const topic = topicOf(document, passage.section).toLowerCase();
  // Words beside the term that the document uses again, and that not most of the corpus uses.
  const counts = wordCounts(document);
  const near = [
    ...new Set(
      contentWords(passage.sentence).filter(
        (word) =>
          word !== anchor &&
          word.length >= 3 &&
          !/\d/.test(word) &&
          (counts.get(word) ?? 0) >= 2 &&
          index.documentFrequency(word) <= index.documents.length * 0.15 &&
          !words(topic).includes(word),
      ),
    ),
  ];
  const related = near.length > 0 ? pick(random, near) : undefined;
  if (style === 'keywords') {
    const second = anchors.length > 1 && random() < 0.5 ? pick(random, anchors) : undefined;
    return shuffle(random, [...new Set([anchor, second, related, random() < 0.6 ? topic : undefined].filter((w) => w !== undefined))]).join(
      ' ',
    );
  }
  const frames = TERM_FRAMES.filter((f) => related !== undefined || !f.includes('{r}'));
  return pick(random, frames)
    .replace('{a}', anchor)
    .replace('{r}', related ?? '')
    .replace('{t}', topic);
}

const PLAIN_FRAMES = [
  'how do I {}?',
  'how to {}',
  '{}',
  'can I {}?',
  'is there a way to {}?',
  '{} - how?',
  'help: {}',
  'question about {}',
];

/**
 * A question in the words a user would know without reading the document: words it uses again and
 * again that are neither rare nor everywhere in the corpus, in the order of one of its sentences.
 */
function plainQuestion(index: CorpusIndex, document: SourceDocument, random: Random): string | undefined {
  const counts = wordCounts(document);
  const passages = passagesOf(document).filter((passage) => passage.sentence.split(' ').length >= 8);
  if (passages.length === 0) return undefined;
  const passage = pick(random, passages);
  const candidates = [
    ...new Set(
      contentWords(passage.sentence).filter(
        (word) =>
          word.length >= 3 &&
          !/\d/.test(word) &&
          !index.isAnchor(word) &&
          (counts.get(word) ?? 0) >= 2 &&
          index.documentFrequency(word) <= index.documents.length * 0.25,
      ),
    ),
  ];
  if (candidates.length < 3) return undefined;
  const keep = new Set(shuffle(random, candidates).slice(0, 3 + Math.floor(random() * 2)));
  const body = candidates.filter((word) => keep.has(word)).join(' ');
  const topic = random() < 0.5 ? ` in ${topicOf(document, passage.section).toLowerCase()}` : '';
  return frame(random, PLAIN_FRAMES, `${body}${topic}`);
}

function wordCounts(document: SourceDocument): Map<string, number> {
  const counts = new Map<string, number>();
  for (const word of words(document.sections.flatMap((section) => section.paragraphs).join(' ')))
    counts.set(word, (counts.get(word) ?? 0) + 1);
  return counts;
}

/** A question on the document's topic, from its title or, for package lists, one package's summary. */
function titleQuestion(document: SourceDocument, random: Random): string | undefined {
  const clean = (text: string) =>
    text
      .replace(/['"`]/g, '')
      .replace(/\([^)]*\)/g, '')
      .replace(/\s+/g, ' ')
      .trim();
  const title = clean(document.title);
  switch (document.kind) {
    case 'licence':
      return undefined;
    case 'packages': {
      const summary = clean(pick(random, document.sections).heading?.replace(/^[^:]+:\s*/, '') ?? '').toLowerCase();
      return frame(random, ['which package provides {}', '{} package', 'is there a debian package for {}?', 'package for {}'], summary);
    }
    case 'nodejs': {
      const [module = '', topic = ''] = title.split(/:\s+/, 2);
      const api = /^(?:new\s+)?([\w.]+)(?:\(|$)/.exec(topic)?.[1];
      if (api?.includes('.'))
        return frame(random, ['how do I use {} in node?', 'what does {} do', 'node {} example', '{} arguments and return value'], api);
      return frame(random, TOPIC_FRAMES, `node ${module.toLowerCase()} ${topic.toLowerCase().replace(/\?/g, '')}`);
    }
    default: {
      // A heading of the document is as good a topic as its title, when it says something.
      const headings = document.sections.map((section) => clean(section.heading ?? '')).filter((h) => contentWords(h).length >= 2);
      const heading = random() < 0.5 && headings.length > 0 ? pick(random, headings) : title;
      if (/\.(txt|md|rst)\b|readme/i.test(heading)) return undefined;
      const command = /^(\S+): (.+)$/.exec(heading);
      if (command?.[1] && command[2] && document.kind === 'manual')
        return frame(random, ['how to {}', 'which command can {}', '{} with {c}', 'command to {}'], command[2].toLowerCase()).replace(
          '{c}',
          command[1],
        );
      const invocation = /^(?:invoking (?:the )?(\S+)(?: program)?|(\S+) invocation)$/i.exec(heading);
      const program = invocation?.[1] ?? invocation?.[2];
      if (program) return frame(random, ['how do I run {}', '{} command line options', 'what arguments does {} accept?'], program);
      return frame(random, TOPIC_FRAMES, heading.toLowerCase());
    }
  }
}

/** An FNV-1a hash of the document id, so each document's queries do not depend on the others. */
function seedOf(text: string, seed: number): number {
  let hash = 0x811c9dc5 ^ seed;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** The share of each style among first choices: everyday questions first, as people mostly ask those. */
const STYLE_MIX: readonly [QueryStyle, number][] = [
  ['title', 0.25],
  ['question', 0.35],
  ['term', 0.2],
  ['keywords', 0.2],
];

function drawStyle(roll: number): QueryStyle {
  let left = roll;
  for (const [style, share] of STYLE_MIX) {
    left -= share;
    if (left < 0) return style;
  }
  return 'question';
}

/** One known-item query per document where one can be made: its drawn style first, then the others. */
export function knownItemQueries(
  documents: readonly CorpusDocument[],
  background: readonly SourceDocument[],
  makeRandom: (seed: number) => Random,
  seed: number,
): KnownItemQuery[] {
  const index = new CorpusIndex(documents, background);
  const queries: KnownItemQuery[] = [];
  for (const { document, path } of documents) {
    const random = makeRandom(seedOf(document.id, seed));
    const first = drawStyle(random());
    const order = [first, ...STYLE_MIX.map(([style]) => style).filter((style) => style !== first)];
    for (const style of order) {
      // A few tries per style: another sentence, another package, another frame.
      const found = Array.from({ length: 4 }, () => {
        if (style === 'title') return titleQuestion(document, random);
        if (style === 'question') return plainQuestion(index, document, random);
        return termQuery(index, document, random, style);
      }).find((query) => query !== undefined && index.answeredOnlyBy(query, path));
      if (found) {
        // Checked before it is paraphrased: the words it was made of point to this document alone.
        const query = converse(random, paraphrase(random, found, PARAPHRASE_SHARE[style]), style)
          .replace(/\s+/g, ' ')
          .trim();
        queries.push({ query, style, relevant: path });
        break;
      }
    }
  }
  return queries;
}

// --------------------------------------------------------------------------------- unanswerable

// Everyday words of questions ("how long", "the best way to fix", "keeps happening") that say nothing
// about the topic: a manual uses them as freely as a cookery book.
const QUESTION_WORDS: ReadonlySet<string> = new Set(
  (
    'long keep keeps best time year day days many much often start change going need safe safely quickly early lower back ' +
    'far away become happen happens ask hold choose improve build built write create remove fix run cause causes caused'
  ).split(' '),
);

export interface UnanswerableQuestion {
  question: string;
  /** About software the corpus does not cover, rather than everyday life. */
  technical: boolean;
}

/**
 * The off-topic questions this corpus cannot answer: none of their topic words is in more than 5% of
 * the documents, and no document holds half of them (two at least).
 */
export function unanswerableQuestions(documents: readonly CorpusDocument[]): { kept: UnanswerableQuestion[]; dropped: string[] } {
  const index = new CorpusIndex(documents);
  const kept: UnanswerableQuestion[] = [];
  const dropped: string[] = [];
  const candidates = [
    ...EVERYDAY_QUESTIONS.map((question) => ({ question, technical: false })),
    ...TECHNICAL_QUESTIONS.map((question) => ({ question, technical: true })),
  ];
  for (const candidate of candidates) {
    const stems = [
      ...new Set(
        contentWords(candidate.question)
          .filter((word) => !QUESTION_WORDS.has(word))
          .map(stem),
      ),
    ];
    const frequent = stems.some((s) => (index.df.get(s) ?? 0) > documents.length * 0.05);
    const together = [...index.stemsOf.values()].some((own) => stems.filter((s) => own.has(s)).length >= Math.max(2, stems.length / 2));
    if (frequent || together) dropped.push(candidate.question);
    else kept.push(candidate);
  }
  return { kept, dropped };
}
