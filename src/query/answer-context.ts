import { basename } from 'node:path';
import type { Tenant } from '../domain/principal.ts';
import { estimateTokens } from '../llm/costs.ts';
import type { ChatMessage } from '../llm/provider.ts';
import type { Generation } from './generation.ts';
import { PROMPT_TOKEN_MARGIN } from './messages.ts';
import type { DatasetSearch, ModelRunner, PassageSurroundings, References } from './ports.ts';

/**
 * The context an answer is generated from (API-CONTRACT 6): each reference a passage that starts with its
 * number and `title | source | date`, so the answer can cite it, followed by its text with the chunks
 * before and after it in its file (their overlap with it not repeated), so a passage cut mid-thought is read
 * whole. The neighbours fit a character budget over the whole context: they are added best passage first
 * and left out first when it is short; the passages themselves are always sent whole, as before.
 *
 * The references returned to the caller are not touched: only the prompt changes.
 */

/** The first line of the context's system message. */
export const CONTEXT_INTRODUCTION =
  'Use the following context to answer:\n' +
  '(Each passage starts with [number] title | source | date; cite the numbers and sources of the passages you use.)';

/**
 * The context window assumed when the model's configuration does not state one (a model on an
 * OpenAI-compatible server): 4,096 tokens, the window llama.cpp's server, LM Studio and Ollama load a model
 * with unless told otherwise (Ollama's was 2,048 before 0.6, where a longer prompt is cut rather than
 * refused), and what knode's own loader gives a local model without `context_size`
 * (llm/llama-cpp/model-registry.ts, DEFAULT_MAX_CONTEXT_SIZE). A hosted model's window is larger: it only
 * gets fewer neighbours than it could read.
 */
export const DEFAULT_CONTEXT_TOKENS = 4096;

/**
 * Characters per token for the budget: three, below the four of English prose that the cost estimates use
 * (llm/costs.ts), since code, figures and most other languages take more tokens per character, and a prompt
 * past a local model's window fails the query.
 */
const CHARACTERS_PER_TOKEN = 3;

/** The longest title and source a passage's first line shows (a long path or URL is cut). */
const MAX_TITLE = 120;
const MAX_SOURCE = 300;

/**
 * The most characters a passage adds besides its text: its first line at its longest, and the blank line
 * between passages. The cost ceiling counts it per reference (pipeline.ts).
 */
const PASSAGE_OVERHEAD = 8 + MAX_TITLE + 3 + MAX_SOURCE + 3 + 10 + 1 + 2;

/** Two chunks whose overlap is not found are joined on a line break (the chunker cut between them at a space or break). */
const JOIN = '\n';

/** Overlap shorter than this is not looked for: a few repeated characters cost less than a wrong merge. */
const MIN_OVERLAP = 16;

/**
 * How many characters the context may take: what is left of the model's window (its configuration's, else
 * DEFAULT_CONTEXT_TOKENS) once the answer (`max_tokens`) and the rest of the prompt are set aside.
 */
export function contextBudget(windowTokens: number | undefined, reservedTokens: number): number {
  return Math.max(0, (windowTokens ?? DEFAULT_CONTEXT_TOKENS) - reservedTokens) * CHARACTERS_PER_TOKEN;
}

/**
 * The tokens a generation needs besides the context: the answer, the caller's messages and the system prompt
 * (estimated as the cost ceiling estimates them, with its margin for the chat template).
 */
export function reservedTokens(messages: readonly ChatMessage[], generation: Generation): number {
  const characters = messages.reduce((sum, message) => sum + message.content.length, 0) + (generation.system_prompt?.length ?? 0);
  return generation.max_tokens + estimateTokens(characters) + PROMPT_TOKEN_MARGIN;
}

/**
 * The most characters a context of `limit` references can take (for the cost ceiling): its passages whole
 * with their first lines, or the budget their neighbours fill, whichever is larger.
 */
export function contextCeiling(limit: number, chunkSize: number, budget: number): number {
  return CONTEXT_INTRODUCTION.length + Math.max(limit * (chunkSize + PASSAGE_OVERHEAD), budget);
}

/** What the context of a query is made from, besides its references. */
export interface ContextRequest {
  readonly tenant: Tenant;
  readonly datasetId: string;
  readonly modelId: string;
  readonly messages: readonly ChatMessage[];
  readonly generation: Generation;
}

/** The context's budget for a query: the model's window (from its configuration) less what the rest of the prompt needs. */
export async function queryBudget(models: ModelRunner, request: Omit<ContextRequest, 'datasetId'>): Promise<number> {
  const window = await models.contextWindow(request.tenant, request.modelId);
  return contextBudget(window, reservedTokens(request.messages, request.generation));
}

/** The context's text for a query's references (undefined when there are none), neighbours read from the dataset. */
export async function answerContext(
  deps: { search: DatasetSearch; models: ModelRunner },
  request: ContextRequest,
  references: References | undefined,
): Promise<string | undefined> {
  if (!references || references.documents.length === 0) return undefined;
  const [surroundings, budget] = await Promise.all([
    deps.search.surroundings(request.tenant, request.datasetId, references.documents),
    queryBudget(deps.models, request),
  ]);
  return contextText(references.documents, surroundings, budget);
}

type Passage = References['documents'][number];

/**
 * The context's text: the passages in their order, each with its first line and its text; then, within
 * `budget` characters for the whole, each passage's neighbours, best passage first (the chunk before, then
 * the chunk after). A neighbour that is itself a passage, or already shown beside another, is not repeated.
 */
export function contextText(passages: readonly Passage[], surroundings: PassageSurroundings, budget: number): string {
  const blocks = passages.map((passage, index) => ({
    head: `[${index + 1}] ${passageHeader(passage, fileDate(passage, surroundings.modified))}\n`,
    before: '',
    text: passage.content,
    after: '',
  }));
  const room: Room = {
    budget,
    shown: new Set(passages.map((passage) => passage.document_id)),
    size:
      CONTEXT_INTRODUCTION.length +
      2 +
      blocks.reduce((sum, block, index) => sum + (index > 0 ? 2 : 0) + block.head.length + block.text.length, 0),
  };
  const overlap = surroundings.chunkOverlap;
  for (const [index, passage] of passages.entries()) {
    const around = surroundings.neighbours.get(passage.document_id);
    const block = blocks[index];
    if (!around || !block) continue;
    block.before = neighbourPart(room, around.before.at(-1), (before) => leadingPart(before, passage.content, overlap));
    block.after = neighbourPart(room, around.after[0], (after) => trailingPart(passage.content, after, overlap));
  }
  const text = blocks.map((block) => `${block.head}${block.before}${block.text}${block.after}`).join('\n\n');
  return `${CONTEXT_INTRODUCTION}\n\n${text}`;
}

/** What is left of the context's budget: the characters used so far and the chunks already shown. */
interface Room {
  readonly budget: number;
  readonly shown: Set<string>;
  size: number;
}

/** A neighbour's part (`partOf` its text) when it is not shown yet and fits in the room left, which it then takes; else ''. */
function neighbourPart(room: Room, neighbour: { id: string; content: string } | undefined, partOf: (content: string) => string): string {
  if (!neighbour || room.shown.has(neighbour.id)) return '';
  const part = partOf(neighbour.content);
  if (part.length === 0 || room.size + part.length > room.budget) return '';
  room.size += part.length;
  room.shown.add(neighbour.id);
  return part;
}

/**
 * `title | source | date`: the document's title (else its file's name), its item's URL (else its file's
 * path) and its date (a feed item's publication, else `fileModified`, its file's), each as far as it is known.
 */
export function passageHeader(passage: Passage, fileModified?: number): string {
  const metadata = passage.metadata;
  const path = text(metadata.source);
  const title = text(metadata.title) ?? (path ? basename(path) : undefined) ?? passage.document_id;
  const source = text(metadata.url) ?? path ?? passage.document_id;
  const date = dayOf(metadata.published_at) ?? dayOf(fileModified);
  return [cut(oneLine(title), MAX_TITLE), cut(oneLine(source), MAX_SOURCE), ...(date ? [date] : [])].join(' | ');
}

/**
 * What `before` adds in front of `passage` (the chunk before it in its file): all of it but the text the
 * passage repeats at its start, or all of it and a line break when no overlap is found.
 */
export function leadingPart(before: string, passage: string, maxOverlap: number): string {
  const overlap = overlapLength(before, passage, maxOverlap);
  return overlap > 0 ? before.slice(0, before.length - overlap) : `${before}${JOIN}`;
}

/** What `after` adds behind `passage` (the chunk after it in its file), likewise. */
export function trailingPart(passage: string, after: string, maxOverlap: number): string {
  const overlap = overlapLength(passage, after, maxOverlap);
  return overlap > 0 ? after.slice(overlap) : `${JOIN}${after}`;
}

/**
 * How many characters at the end of `first` the start of `second` repeats, at most `maxOverlap` (the
 * dataset's chunkOverlap): the longest such overlap that begins a word of `first`, as the chunker's
 * overlaps do (ingestion/chunker.ts, overlapStart), and is at least MIN_OVERLAP long (0: none). Linear in
 * `maxOverlap`: Knuth-Morris-Pratt's failure function of the start of `second`, run over the end of `first`.
 */
export function overlapLength(first: string, second: string, maxOverlap: number): number {
  const length = Math.min(maxOverlap, first.length, second.length);
  if (length < MIN_OVERLAP) return 0;
  const pattern = second.slice(0, length);
  const failure = failureFunction(pattern);
  let matched = 0;
  for (let i = first.length - length; i < first.length; i++) {
    while (matched > 0 && (matched === length || first[i] !== pattern[matched])) matched = failure[matched - 1] as number;
    if (first[i] === pattern[matched]) matched++;
  }
  // `matched` is the longest end of `first` that starts `second`; shorter ones follow the failure function.
  while (matched >= MIN_OVERLAP) {
    const start = first.length - matched;
    if (start === 0 || /\s/.test(first[start - 1] as string)) return matched;
    matched = failure[matched - 1] as number;
  }
  return 0;
}

/** Knuth-Morris-Pratt's failure function: for each prefix of `pattern`, the length of its longest proper border. */
function failureFunction(pattern: string): Int32Array {
  const failure = new Int32Array(pattern.length);
  for (let i = 1, k = 0; i < pattern.length; i++) {
    while (k > 0 && pattern[i] !== pattern[k]) k = failure[k - 1] as number;
    if (pattern[i] === pattern[k]) k++;
    failure[i] = k;
  }
  return failure;
}

/** When the passage's file was modified, if the dataset knows (a folder's file). */
function fileDate(passage: Passage, modified: ReadonlyMap<string, number>): number | undefined {
  return typeof passage.metadata.source === 'string' ? modified.get(passage.metadata.source) : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** A date as its day (`YYYY-MM-DD`, UTC); undefined when it is not one. */
function dayOf(value: unknown): string | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString().slice(0, 10);
}

/** A title or source on the passage's first line: its line breaks and runs of spaces become one space. */
function oneLine(value: string): string {
  return value.replace(/\s+/g, ' ');
}

function cut(value: string, max: number): string {
  return value.length <= max ? value : `${value.slice(0, max - 1)}…`;
}
