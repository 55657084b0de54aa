/**
 * The evaluation set: a seeded selection of the documents sources.ts reads, written in the five formats
 * (about a fifth each), and the labelled queries made from them. Everything is derived from the text
 * on this machine and a seed, so the same machine always rebuilds the same set; the folder is named
 * after a fingerprint of its contents and written only when missing.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { seededRandom } from '../../src/util/seeded-random.ts';
import { type KnownItemQuery, knownItemQueries, shuffle, type UnanswerableQuestion, unanswerableQuestions } from './queries.ts';
import { FORMATS, type Format, renderDocument } from './render.ts';
import { readAllSources, type SourceDocument, type SourceKind } from './sources.ts';
import { wordCount } from './text.ts';

export type EvalSize = 'full' | 'small';

/** Documents of each kind: roughly how a person's folder of technical documents mixes them. */
const QUOTAS: Record<EvalSize, Record<SourceKind, number>> = {
  full: { manual: 210, nodejs: 80, readme: 70, packages: 28, licence: 12 },
  small: { manual: 30, nodejs: 12, readme: 10, packages: 5, licence: 3 },
};
/** The small set's documents are cut shorter, so that the test indexes them in seconds. */
const SMALL_MAX_WORDS = 450;
const UNANSWERABLE_COUNT: Record<EvalSize, number> = { full: Number.POSITIVE_INFINITY, small: 20 };
const SEED = 20_260_101;
/** Bump when render.ts changes, so that folders written by the old one are not reused. */
const RENDERING_VERSION = 1;

export const DEFAULT_CACHE = join(import.meta.dir, '.cache');
/**
 * The small set as kept in git, documents included: built once from a machine's documentation, it stays
 * the same when packages come and go (installing chromium adds READMEs and package descriptions, which
 * would reshuffle a set derived afresh), so the test's floors mean the same on every machine.
 */
export const OWNED_SMALL_SET = join(import.meta.dir, 'small-set');

export interface CorpusFile {
  path: string;
  id: string;
  kind: SourceKind;
  format: Format;
  origin: string;
  title: string;
  words: number;
}

export interface EvalSet {
  size: EvalSize;
  /** The corpus folder: what the dataset indexes. */
  dir: string;
  /** Changes whenever a document, its format or a query changes. */
  fingerprint: string;
  /** Changes whenever a document or its format changes: names the corpus folder and its index. */
  corpusFingerprint: string;
  files: CorpusFile[];
  queries: KnownItemQuery[];
  unanswerable: UnanswerableQuestion[];
}

/** Builds (or finds, when already written) the evaluation set of `size` under `cacheRoot`. */
export async function buildEvalSet(size: EvalSize, cacheRoot = DEFAULT_CACHE): Promise<EvalSet> {
  const random = seededRandom(SEED);
  const sources = readAllSources();
  const selected = selectDocuments(sources, size, random);
  const formats = shuffle(random, selected).map((document, i) => ({ document, format: FORMATS[i % FORMATS.length] as Format }));
  formats.sort((a, b) => a.document.id.localeCompare(b.document.id));
  const corpus = formats.map(({ document, format }) => ({ document, format, path: `${document.kind}/${document.id}.${format}` }));

  const queries = knownItemQueries(corpus, sources, seededRandom, SEED);
  const { kept } = unanswerableQuestions(corpus);
  // As many technical as everyday ones when the set is cut.
  const half = UNANSWERABLE_COUNT[size] / 2;
  const unanswerable = [...kept.filter((q) => !q.technical).slice(0, half), ...kept.filter((q) => q.technical).slice(0, half)];
  const files: CorpusFile[] = corpus.map(({ document, format, path }) => ({
    path,
    id: document.id,
    kind: document.kind,
    format,
    origin: document.origin,
    title: document.title,
    words: document.sections.reduce((sum, section) => sum + wordCount(section.paragraphs.join(' ')), 0),
  }));
  const hash = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 12);
  const corpusFingerprint = hash({ RENDERING_VERSION, corpus: corpus.map(({ document, path }) => ({ document, path })) });
  const fingerprint = hash({ corpusFingerprint, queries, unanswerable });

  const dir = join(cacheRoot, `corpus-${size}-${corpusFingerprint}`);
  if (!existsSync(dir)) {
    // Written beside, then renamed: an interrupted build never leaves a folder that looks complete.
    const partial = `${dir}.partial`;
    rmSync(partial, { recursive: true, force: true });
    for (const { document, format, path } of corpus) {
      mkdirSync(dirname(join(partial, path)), { recursive: true });
      writeFileSync(join(partial, path), await renderDocument(document, format));
    }
    renameSync(partial, dir);
    removeStale(cacheRoot, `corpus-${size}-`, dir);
  }
  // Beside the corpus, for people reading the set (the queries change more often than the documents).
  writeFileSync(
    join(cacheRoot, `labelled-set-${size}.json`),
    `${JSON.stringify(labelledSet({ size, fingerprint, corpusFingerprint, files, queries, unanswerable }), null, 2)}\n`,
  );
  return { size, dir, fingerprint, corpusFingerprint, files, queries, unanswerable };
}

/** The small set kept in git (OWNED_SMALL_SET): its rendered documents and its labelled queries. */
export function ownedSmallSet(root = OWNED_SMALL_SET): EvalSet {
  const labelled = readLabelledSet(join(root, 'labelled-set.json'));
  if (!labelled) throw new Error(`${root}/labelled-set.json is missing`);
  const files: CorpusFile[] = labelled.documents.map(({ path, origin, words }) => ({
    path,
    id: basename(path, extname(path)),
    kind: path.split('/')[0] as SourceKind,
    format: extname(path).slice(1) as Format,
    origin,
    title: '',
    words,
  }));
  const { size, fingerprint, corpusFingerprint, queries, unanswerable } = labelled;
  return { size, dir: join(root, 'corpus'), fingerprint, corpusFingerprint, files, queries, unanswerable };
}

/** Replaces the owned small set with `set` (built from this machine): floors must then be measured again. */
export function writeOwnedSmallSet(set: EvalSet, root = OWNED_SMALL_SET): void {
  rmSync(root, { recursive: true, force: true });
  cpSync(set.dir, join(root, 'corpus'), { recursive: true });
  writeFileSync(join(root, 'labelled-set.json'), `${JSON.stringify(labelledSet(set), null, 2)}\n`);
}

/** What is worth keeping in git: the queries with their documents' origins, not the documents. */
export function labelledSet(set: Omit<EvalSet, 'dir'>) {
  return {
    size: set.size,
    fingerprint: set.fingerprint,
    corpusFingerprint: set.corpusFingerprint,
    documents: set.files.map(({ path, origin, words }) => ({ path, origin, words })),
    queries: set.queries,
    unanswerable: set.unanswerable,
  };
}

/** Deletes the older folders named `prefix*` under `root` (earlier versions of the set), all but `keep`. */
export function removeStale(root: string, prefix: string, keep: string): void {
  for (const name of readdirSync(root)) {
    if (name.startsWith(prefix) && join(root, name) !== keep) rmSync(join(root, name), { recursive: true, force: true });
  }
}

export function readLabelledSet(path: string): ReturnType<typeof labelledSet> | undefined {
  return existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : undefined;
}

function selectDocuments(all: readonly SourceDocument[], size: EvalSize, random: () => number): SourceDocument[] {
  const selected: SourceDocument[] = [];
  for (const [kind, quota] of Object.entries(QUOTAS[size]) as [SourceKind, number][]) {
    const candidates = all.filter((document) => document.kind === kind).sort((a, b) => a.id.localeCompare(b.id));
    selected.push(...shuffle(random, candidates).slice(0, quota));
  }
  return size === 'small' ? selected.map(shorten) : selected;
}

function shorten(document: SourceDocument): SourceDocument {
  let left = SMALL_MAX_WORDS;
  const sections = document.sections
    .map((section) => {
      const paragraphs: string[] = [];
      for (const paragraph of section.paragraphs) {
        if (left <= 0) break;
        const kept = paragraph.split(' ').slice(0, left).join(' ');
        paragraphs.push(kept);
        left -= wordCount(kept);
      }
      return { ...section, paragraphs };
    })
    .filter((section) => section.paragraphs.length > 0);
  return { ...document, sections };
}
