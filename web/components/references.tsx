import { score } from '../lib/format.ts';
import type { Reference } from '../views.ts';

/** Where a chunk comes from: its file, and the page when the parser knew it. */
function sourceOf(reference: Reference): string {
  const { source, page } = reference.metadata;
  const file = typeof source === 'string' ? source : 'unknown source';
  return page !== undefined && page !== null ? `${file}, page ${String(page)}` : file;
}

/**
 * Search results or an answer's references: each one's score (calibrated: 0.5 means "more likely relevant
 * than not"), source file and page; the text is one click (or Enter) away.
 */
export function References(props: { documents: Reference[]; open?: boolean }) {
  return (
    <ol class="references">
      {props.documents.map((reference, index) => {
        const title = typeof reference.metadata.title === 'string' ? reference.metadata.title : undefined;
        return (
          <li key={reference.document_id}>
            <details open={props.open && index === 0 ? true : undefined}>
              <summary>
                <span class="ref-rank">[{index + 1}]</span>
                <span class="ref-source">{sourceOf(reference)}</span>
                {title && <span class="ref-title">{title}</span>}
                <span class="ref-score" title="Calibrated relevance, 0 to 1">
                  <meter min={0} max={1} low={0.3} high={0.5} optimum={1} value={reference.similarity_score} aria-hidden="true" />
                  score {score(reference.similarity_score)}
                </span>
              </summary>
              <p class="ref-content">{reference.content}</p>
            </details>
          </li>
        );
      })}
    </ol>
  );
}
