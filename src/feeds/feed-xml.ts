/**
 * A bounded reader of RSS 2.0, RSS 1.0 (RDF) and Atom documents: just enough XML for feeds, written here
 * rather than taken from a library so that nothing in it can expand an entity. It knows elements,
 * attributes, text, CDATA, comments and processing instructions; a DOCTYPE is skipped whole (its internal
 * subset included), so an entity it declares is never defined, and a reference to one (`&xxe;`) is kept as
 * the text it is. Only the five predefined entities and character references are decoded. Depth and the
 * number of elements are bounded, and the input is bounded by the fetch that read it (feed-fetch.ts).
 */

/** Deeper than any feed (an Atom entry's XHTML content nests a few levels): a hostile nesting stops here. */
const MAX_DEPTH = 256;
/** About 40 elements per item for the 5,000-item window, with room to spare. */
const MAX_ELEMENTS = 1_000_000;

export class FeedFormatError extends Error {
  override readonly name = 'FeedFormatError';
}

export interface XmlElement {
  /** The local name, lower case (`content:encoded` → `encoded`; prefixes are dropped). */
  readonly name: string;
  /** The name as written (`content:encoded`). */
  readonly qualified: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly children: XmlElement[];
  /** The element's own text (CDATA included), entities decoded, children's text left out. */
  text: string;
  /** Where its content starts and ends in the source (an Atom `xhtml` content is that slice). */
  innerStart: number;
  innerEnd: number;
}

const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** Decodes the predefined entities and character references; any other reference stays as written. */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{0,31});/g, (whole, name: string) => {
    if (name[0] !== '#') return PREDEFINED[name] ?? whole;
    const code = name[1] === 'x' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
    return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : whole;
  });
}

const NAME = /[^\s/>=]+/y;
const ATTRIBUTE = /\s*([^\s/>=]+)\s*=\s*("[^"]*"|'[^']*')/y;

function localName(qualified: string): string {
  const colon = qualified.indexOf(':');
  return (colon >= 0 ? qualified.slice(colon + 1) : qualified).toLowerCase();
}

/** Parses a feed document into its root element; a document that is not well-formed enough fails with FeedFormatError. */
export function parseXml(source: string): XmlElement {
  const root: XmlElement = {
    name: '#document',
    qualified: '#document',
    attributes: {},
    children: [],
    text: '',
    innerStart: 0,
    innerEnd: 0,
  };
  const stack: XmlElement[] = [root];
  let elements = 0;
  let at = 0;
  const top = () => stack[stack.length - 1] as XmlElement;
  const skipPast = (marker: string, what: string) => {
    const end = source.indexOf(marker, at);
    if (end < 0) throw new FeedFormatError(`unterminated ${what}`);
    at = end + marker.length;
    return end;
  };
  while (at < source.length) {
    const open = source.indexOf('<', at);
    if (open < 0) {
      top().text += decodeEntities(source.slice(at));
      break;
    }
    if (open > at) top().text += decodeEntities(source.slice(at, open));
    at = open;
    if (source.startsWith('<!--', at)) skipPast('-->', 'comment');
    else if (source.startsWith('<![CDATA[', at)) {
      const start = at + 9;
      const end = skipPast(']]>', 'CDATA section');
      top().text += source.slice(start, end);
    } else if (source.startsWith('<?', at)) skipPast('?>', 'processing instruction');
    else if (source.startsWith('<!', at)) skipDeclaration();
    else if (source.startsWith('</', at)) {
      const end = skipPast('>', 'end tag');
      const name = source.slice(open + 2, end).trim();
      const element = top();
      if (stack.length === 1 || element.qualified !== name) throw new FeedFormatError(`unexpected </${name}>`);
      element.innerEnd = open;
      stack.pop();
    } else openElement();
  }
  if (stack.length > 1) throw new FeedFormatError(`<${top().qualified}> is never closed`);
  const first = root.children[0];
  if (!first) throw new FeedFormatError('no root element');
  return first;

  function skipDeclaration(): void {
    // <!DOCTYPE name [ ...internal subset... ]>: skipped whole, brackets included; nothing in it is defined.
    let depth = 0;
    for (let i = at + 2; i < source.length; i++) {
      const char = source[i];
      if (char === '[') depth++;
      else if (char === ']') depth--;
      else if (char === '>' && depth <= 0) {
        at = i + 1;
        return;
      }
    }
    throw new FeedFormatError('unterminated declaration');
  }

  function openElement(): void {
    NAME.lastIndex = at + 1;
    const name = NAME.exec(source)?.[0];
    if (!name) throw new FeedFormatError('an element without a name');
    let cursor = at + 1 + name.length;
    const attributes: Record<string, string> = {};
    for (;;) {
      ATTRIBUTE.lastIndex = cursor;
      const attribute = ATTRIBUTE.exec(source);
      if (!attribute) break;
      const [whole, key, quoted] = attribute as unknown as [string, string, string];
      attributes[localName(key)] = decodeEntities(quoted.slice(1, -1));
      cursor += whole.length;
    }
    while (cursor < source.length && /\s/.test(source[cursor] as string)) cursor++;
    const selfClosing = source.startsWith('/>', cursor);
    if (!selfClosing && source[cursor] !== '>') throw new FeedFormatError(`malformed <${name}>`);
    at = cursor + (selfClosing ? 2 : 1);
    if (++elements > MAX_ELEMENTS) throw new FeedFormatError(`more than ${MAX_ELEMENTS} elements`);
    if (stack.length > MAX_DEPTH) throw new FeedFormatError(`nested deeper than ${MAX_DEPTH} elements`);
    const element: XmlElement = {
      name: localName(name),
      qualified: name,
      attributes,
      children: [],
      text: '',
      innerStart: at,
      innerEnd: at,
    };
    top().children.push(element);
    if (!selfClosing) stack.push(element);
  }
}

/** The first child named `name` (local name), if any. */
export function child(element: XmlElement, ...names: string[]): XmlElement | undefined {
  for (const name of names) {
    const found = element.children.find((candidate) => candidate.name === name);
    if (found) return found;
  }
  return undefined;
}

/** The text of the first child named one of `names`, trimmed; undefined when none has any. */
export function childText(element: XmlElement, ...names: string[]): string | undefined {
  for (const name of names) {
    const text = element.children.find((candidate) => candidate.name === name)?.text.trim();
    if (text) return text;
  }
  return undefined;
}
