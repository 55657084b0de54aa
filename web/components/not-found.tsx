import { useFirstRender, useTitle } from '../lib/hooks.ts';
import { PageHeader } from './ui.tsx';

export function NotFound() {
  useTitle('Not found');
  useFirstRender();
  return (
    <>
      <PageHeader title="Nothing here" subtitle="This page does not exist in the console." />
      <p>
        <a href="/">Back to the overview</a>
      </p>
    </>
  );
}
