/**
 * USE-lite's SentencePiece tokenizer, giving exactly the ids of @energetic-ai/embeddings' Tokenizer (the
 * one the tfjs engine uses, quirks included: the same Viterbi ties, unknown characters merged, pieces
 * measured in UTF-16 units when tracing back), which test/embeddings-onnx.test.ts checks on real text.
 * It is faster: the original copies the rest of the text at every position (quadratic in the text's
 * length), this one walks the trie in place.
 *
 * Also builds the model's sparse input: for each token, its [row, position] and its id.
 */

const SEPARATOR = '\u2581';
const RESERVED_SYMBOLS = 6;

/** USE-lite sees at most this many tokens of a text; the graph drops the rest (ClipToMaxLength). */
export const USE_LITE_MAX_TOKENS = 128;

export type Vocabulary = readonly (readonly [string, number])[];

interface TrieNode {
  readonly children: Map<string, TrieNode>;
  /** Set on a node that ends a piece. */
  piece?: { readonly length: number; readonly score: number; readonly index: number };
}

export class UseLiteTokenizer {
  private readonly root: TrieNode = { children: new Map() };

  constructor(private readonly vocabulary: Vocabulary) {
    for (let index = RESERVED_SYMBOLS; index < vocabulary.length; index++) {
      const [piece, score] = vocabulary[index] as readonly [string, number];
      const symbols = [...piece];
      let node = this.root;
      for (const symbol of symbols) {
        let child = node.children.get(symbol);
        if (!child) {
          child = { children: new Map() };
          node.children.set(symbol, child);
        }
        node = child;
      }
      // A later duplicate overwrites an earlier one, as in the original trie.
      if (symbols.length > 0) node.piece = { length: symbols.length, score, index };
    }
  }

  encode(text: string): number[] {
    const normalised = text.normalize('NFKC');
    const input = normalised.length > 0 ? SEPARATOR + normalised.replace(/ /g, SEPARATOR) : normalised;
    const symbols = [...input];
    const words = bestPieces(this.piecesEndingAt(symbols));
    const reversed: number[] = [];
    for (let at = symbols.length; at > 0; ) {
      const id = words[at] as number;
      reversed.push(id);
      at -= (this.vocabulary[id] as readonly [string, number])[0].length;
    }
    return mergeUnknowns(reversed).reverse();
  }

  /**
   * Pieces by end position, in the order the original visits them: start ascending (its object keys),
   * then shorter before longer (commonPrefixSearch's order). A (start, end) pair has one piece at most.
   */
  private piecesEndingAt(symbols: readonly string[]): Candidate[][] {
    const count = symbols.length;
    const endingAt: Candidate[][] = Array.from({ length: count + 1 }, () => []);
    for (let start = 0; start < count; start++) {
      let node = this.root.children.get(symbols[start] as string);
      let found = false;
      for (let position = start; position < count && node; position++) {
        if (node.piece) {
          endingAt[start + node.piece.length]?.push({ start, score: node.piece.score, index: node.piece.index });
          found = true;
        }
        node = node.children.get(symbols[position + 1] as string);
      }
      // No piece starts here: the character alone, as the unknown piece (id 0, score 0).
      if (!found) endingAt[start + 1]?.push({ start, score: 0, index: 0 });
    }
    return endingAt;
  }
}

/** A piece that may end at a position: where it starts, its score and its id. */
interface Candidate {
  start: number;
  score: number;
  index: number;
}

/** Viterbi over the candidates: the id of the last piece of the best-scoring path to each end position. */
function bestPieces(endingAt: readonly Candidate[][]): number[] {
  const words = new Array<number>(endingAt.length).fill(0);
  const best = new Array<number>(endingAt.length).fill(0);
  for (let end = 0; end < endingAt.length; end++) {
    for (const candidate of endingAt[end] as Candidate[]) {
      const score = candidate.score + (best[candidate.start] as number);
      // As the original: 0 means "not reached yet" (so a total of exactly 0 can be replaced), ties go to the later.
      if (best[end] === 0 || score >= (best[end] as number)) {
        best[end] = score;
        words[end] = candidate.index;
      }
    }
  }
  return words;
}

/** Consecutive unknown pieces (id 0) as one, as the original does. */
function mergeUnknowns(ids: readonly number[]): number[] {
  const merged: number[] = [];
  let previousUnknown = false;
  for (const id of ids) {
    if (!(previousUnknown && id === 0)) merged.push(id);
    previousUnknown = id === 0;
  }
  return merged;
}

/** The graph's inputs for a batch: [row, position] of every token (the first 128 of each text) and its id. */
export interface SparseBatch {
  readonly indices: BigInt64Array;
  readonly values: BigInt64Array;
  /** The last row that has a token, plus one: how many rows the graph returns. */
  readonly rows: number;
}

export function sparseBatch(tokenized: readonly (readonly number[])[]): SparseBatch {
  let total = 0;
  for (const ids of tokenized) total += Math.min(ids.length, USE_LITE_MAX_TOKENS);
  const indices = new BigInt64Array(total * 2);
  const values = new BigInt64Array(total);
  let rows = 0;
  let at = 0;
  tokenized.forEach((ids, row) => {
    const kept = Math.min(ids.length, USE_LITE_MAX_TOKENS);
    if (kept > 0) rows = row + 1;
    for (let position = 0; position < kept; position++) {
      indices[at * 2] = BigInt(row);
      indices[at * 2 + 1] = BigInt(position);
      values[at] = BigInt(ids[position] as number);
      at++;
    }
  });
  return { indices, values, rows };
}
