import type { QueryTerms } from '../../views.ts';

/** The smallest and largest type of a term, in rem: the smallest stays readable, the largest fits 390 px. */
const SMALLEST = 0.85;
const LARGEST = 2.1;

/**
 * What is asked: the most frequent terms, each as large as its count (on a logarithmic scale, so one very
 * common word does not shrink the rest to nothing). Plain text in a list, in alphabetical order so the eye can
 * find a word; a screen reader reads each term with its count. No library: a word cloud's layout engine
 * would be larger than the whole page.
 */
export function WordCloud(props: { terms: QueryTerms['terms'] }) {
  const counts = props.terms.map((entry) => entry.count);
  const most = Math.max(1, ...counts);
  const least = Math.min(most, ...counts);
  const size = (count: number) =>
    most === least ? (SMALLEST + LARGEST) / 2 : SMALLEST + ((LARGEST - SMALLEST) * Math.log(count / least)) / Math.log(most / least);
  const sorted = [...props.terms].sort((a, b) => (a.term < b.term ? -1 : a.term > b.term ? 1 : 0));
  const mostAsked = props.terms.slice(0, 3).map((entry) => entry.term);
  return (
    <ul class="word-cloud" aria-label="Terms of the questions asked, each sized by how often it was asked">
      {sorted.map((entry) => (
        <li
          key={entry.term}
          data-term={entry.term}
          data-count={entry.count}
          class={mostAsked.includes(entry.term) ? 'word-cloud-top' : undefined}
          // Set through the DOM (CSSOM), which the console's Content-Security-Policy allows; an inline style attribute it would not.
          style={{ fontSize: `${size(entry.count).toFixed(2)}rem` }}
          title={`${entry.term}: ${entry.count}`}
        >
          {entry.term}
          <span class="visually-hidden">, {entry.count === 1 ? 'once' : `${entry.count} times`}</span>
        </li>
      ))}
    </ul>
  );
}
