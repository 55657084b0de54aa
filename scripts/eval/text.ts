/** Text helpers shared by the corpus builder and the query generator. */

/**
 * Plain printable Latin-1: the PDF writer of test/fixtures draws Helvetica with WinAnsiEncoding, so every
 * format gets the same characters (typographic quotes and dashes become ASCII, accents are kept).
 */
export function normalise(text: string): string {
  return text
    .replace(/[\u2018\u2019\u201a\u201b\u2032]/g, "'")
    .replace(/[\u201c\u201d\u201e\u2033]/g, '"')
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/\u2026/g, '...')
    .replace(/[\u00a0\u2000-\u200b\u202f]/g, ' ')
    .replace(/\t/g, '    ')
    .normalize('NFKC')
    .replace(/[^\n\x20-\x7e\u00a1-\u00ff]/g, '');
}

/** Lower-cased words the way FTS5's unicode61 tokenizer separates them (letters and digits). */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

export function wordCount(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** Words that carry no topic: never used as anchors, ignored when a query's content words are checked. */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    'a about above after again against all also am an and any are as at be because been before being below between both but by can ' +
    'cannot could did do does doing done down during each either else etc even ever every few for from further get gets given go had has ' +
    'have having he her here hers him his how however i if in into is it its itself just least less like made make makes many may me might ' +
    'more most much must my need needs no nor not now of off often on once one only or other others otherwise our out over own per perhaps ' +
    'please rather same see seen shall she should since so some such than that the their them then there these they this those though ' +
    'through thus to too under until up upon us use used uses using very via was way we well were what when where whether which while who ' +
    'whom whose why will with within without would yet you your yours e g ie eg usually also first second new old way want wants good ' +
    'best know tell find show work works something anything thing things still take takes example following default case value values set ' +
    'sets number two three type types part name names line lines see section option options'
  ).split(' '),
);

/** Words of the query generator's templates: they are not evidence of anything in the corpus. */
export const TEMPLATE_WORDS: ReadonlySet<string> = new Set(
  'how what why which where when is are can do does i my to the a an use using explain documentation docs help difference between there way get'.split(
    ' ',
  ),
);

export function contentWords(text: string): string[] {
  return words(text).filter((word) => !STOPWORDS.has(word) && !TEMPLATE_WORDS.has(word) && !/^\d+$/.test(word) && word.length > 1);
}
