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
  return new XmlReader(source).read();
}

/** One pass over a document: `at` moves through it, the stack holds the elements open there. */
class XmlReader {
  private readonly root: XmlElement = newElement('#document', {}, 0);
  private readonly stack: XmlElement[] = [this.root];
  private elements = 0;
  private at = 0;

  constructor(private readonly source: string) {}

  read(): XmlElement {
    const { source } = this;
    while (this.at < source.length) {
      const open = source.indexOf('<', this.at);
      if (open < 0) {
        this.top().text += decodeEntities(source.slice(this.at));
        break;
      }
      if (open > this.at) this.top().text += decodeEntities(source.slice(this.at, open));
      this.at = open;
      this.markup();
    }
    if (this.stack.length > 1) throw new FeedFormatError(`<${this.top().qualified}> is never closed`);
    const first = this.root.children[0];
    if (!first) throw new FeedFormatError('no root element');
    return first;
  }

  /** What starts with `<` at `at`: a comment, CDATA, a processing instruction, a declaration, an end tag or an element. */
  private markup(): void {
    const { source, at } = this;
    if (source.startsWith('<!--', at)) this.skipPast('-->', 'comment');
    else if (source.startsWith('<![CDATA[', at)) {
      const end = this.skipPast(']]>', 'CDATA section');
      this.top().text += source.slice(at + 9, end);
    } else if (source.startsWith('<?', at)) this.skipPast('?>', 'processing instruction');
    else if (source.startsWith('<!', at)) this.skipDeclaration();
    else if (source.startsWith('</', at)) this.closeElement();
    else this.openElement();
  }

  private top(): XmlElement {
    return this.stack[this.stack.length - 1] as XmlElement;
  }

  /** Moves past the next `marker`; returns where it starts. */
  private skipPast(marker: string, what: string): number {
    const end = this.source.indexOf(marker, this.at);
    if (end < 0) throw new FeedFormatError(`unterminated ${what}`);
    this.at = end + marker.length;
    return end;
  }

  /** <!DOCTYPE name [ ...internal subset... ]>: skipped whole, brackets included; nothing in it is defined. */
  private skipDeclaration(): void {
    let depth = 0;
    for (let i = this.at + 2; i < this.source.length; i++) {
      const char = this.source[i];
      if (char === '[') depth++;
      else if (char === ']') depth--;
      else if (char === '>' && depth <= 0) {
        this.at = i + 1;
        return;
      }
    }
    throw new FeedFormatError('unterminated declaration');
  }

  private closeElement(): void {
    const open = this.at;
    const end = this.skipPast('>', 'end tag');
    const name = this.source.slice(open + 2, end).trim();
    const element = this.top();
    if (this.stack.length === 1 || element.qualified !== name) throw new FeedFormatError(`unexpected </${name}>`);
    element.innerEnd = open;
    this.stack.pop();
  }

  private openElement(): void {
    const { source } = this;
    NAME.lastIndex = this.at + 1;
    const name = NAME.exec(source)?.[0];
    if (!name) throw new FeedFormatError('an element without a name');
    const { attributes, end } = readAttributes(source, this.at + 1 + name.length);
    const selfClosing = source.startsWith('/>', end);
    if (!selfClosing && source[end] !== '>') throw new FeedFormatError(`malformed <${name}>`);
    this.at = end + (selfClosing ? 2 : 1);
    if (++this.elements > MAX_ELEMENTS) throw new FeedFormatError(`more than ${MAX_ELEMENTS} elements`);
    if (this.stack.length > MAX_DEPTH) throw new FeedFormatError(`nested deeper than ${MAX_DEPTH} elements`);
    const element = newElement(name, attributes, this.at);
    this.top().children.push(element);
    if (!selfClosing) this.stack.push(element);
  }
}

function newElement(qualified: string, attributes: Record<string, string>, innerStart: number): XmlElement {
  const name = qualified === '#document' ? qualified : localName(qualified);
  return { name, qualified, attributes, children: [], text: '', innerStart, innerEnd: innerStart };
}

/** The attributes from `cursor` on (local names, values decoded), and where the tag's end should be. */
function readAttributes(source: string, cursor: number): { attributes: Record<string, string>; end: number } {
  const attributes: Record<string, string> = {};
  let at = cursor;
  for (;;) {
    ATTRIBUTE.lastIndex = at;
    const attribute = ATTRIBUTE.exec(source);
    if (!attribute) break;
    const [whole, key, quoted] = attribute as unknown as [string, string, string];
    attributes[localName(key)] = decodeEntities(quoted.slice(1, -1));
    at += whole.length;
  }
  while (at < source.length && /\s/.test(source[at] as string)) at++;
  return { attributes, end: at };
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
