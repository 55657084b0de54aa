import { errorMessage } from '../../domain/errors.ts';
import { textTooLarge, utf8Bytes } from './limits.ts';
import { cellText, rowLine, type TableOptions, TableSections, TextBudget } from './tabular.ts';
import { decodeTextFile } from './text.ts';
import { type ParsedDocument, type ParsedSection, ParseError } from './types.ts';

/**
 * JSON as the tables and facts it holds. An array of objects (at the top or anywhere inside) is a table:
 * each object one row, written like a spreadsheet's rows (tabular.ts), its keys as the header
 * (`name: Ada | born: 1815 | address.city: London`), and its location is the array's path. Everything
 * else becomes one `path: value` line per value (`server.port: 8080`), so a value keeps the name that
 * says what it is wherever the chunker cuts.
 *
 * A JSON file is text, counted against SVC_MAX_TEXT_MB before it is parsed (JSON.parse holds several
 * times the text as objects). Values are walked with a stack of our own, not recursion, so a deeply
 * nested file cannot overflow the thread's stack here; one too deep for JSON.parse itself fails as damaged.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function parseJson(bytes: Uint8Array, options: TableOptions): ParsedDocument {
  const least = Math.floor((bytes.length - 3) / 2);
  if (least > options.maxTextBytes) throw textTooLarge(least, options, true);
  const text = decodeTextFile(bytes);
  const size = utf8Bytes(text);
  if (size > options.maxTextBytes) throw textTooLarge(size, options);
  let value: Json;
  try {
    value = JSON.parse(text) as Json;
  } catch (error) {
    throw new ParseError('damaged', `JSON could not be parsed: ${errorMessage(error) || 'unknown error'}`);
  }

  const budget = new TextBudget(options);
  const facts: string[] = [];
  const tables: ParsedSection[] = [];
  walk(
    value,
    '',
    (path, item) => {
      if (isTable(item)) {
        const rows = new TableSections(tables, budget, options, path === '' ? {} : { json_path: path });
        item.forEach((row, index) => {
          rows.add(index + 1, rowLine(flatten(row)));
        });
        rows.finish();
        return true;
      }
      return false;
    },
    (path, scalar) => {
      const line = `${path || 'value'}: ${scalar}`;
      budget.spend(line);
      facts.push(line);
    },
  );
  // The facts first: in a document with a few settings and a list, they say what the list is about.
  const sections: ParsedSection[] = facts.length > 0 ? [{ text: facts.join('\n') }, ...tables] : tables;
  return { sections };
}

/** An array whose items are all objects (not arrays, not null): the rows of a table. */
function isTable(value: Json): value is { [key: string]: Json }[] {
  return Array.isArray(value) && value.length > 0 && value.every((item) => isObject(item));
}

function isObject(value: Json): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A scalar's text on one line; an array of scalars is one value, its items joined by commas. */
function scalarText(value: Json): string | undefined {
  if (value === null) return '';
  if (typeof value === 'string') return cellText(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((item) => item === null || typeof item !== 'object')) {
    return value
      .map((item) => scalarText(item) ?? '')
      .filter((item) => item !== '')
      .join(', ');
  }
  return undefined;
}

function childPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Depth first, in document order, without recursion. `table` is offered every array and object first and
 * says whether it took it whole; every scalar left reaches `scalar` with its path.
 */
function walk(
  root: Json,
  rootPath: string,
  table: (path: string, value: Json) => boolean,
  scalar: (path: string, text: string) => void,
): void {
  const stack: [string, Json][] = [[rootPath, root]];
  while (stack.length > 0) {
    const [path, value] = stack.pop() as [string, Json];
    const text = scalarText(value);
    if (text !== undefined) {
      if (text !== '') scalar(path, text);
      continue;
    }
    if (table(path, value)) continue;
    const children: [string, Json][] = Array.isArray(value)
      ? value.map((item, index) => [childPath(path, index), item])
      : Object.entries(value as { [key: string]: Json }).map(([key, item]) => [childPath(path, key), item]);
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as [string, Json]);
  }
}

/** One table row's cells: every value inside it with its path from the row (`address.city`). */
function flatten(row: { [key: string]: Json }): [string, string][] {
  const cells: [string, string][] = [];
  walk(
    row,
    '',
    () => false,
    (path, text) => {
      cells.push([path, text]);
    },
  );
  return cells;
}
