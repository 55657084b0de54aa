import { ErrorNotice, PageHeader } from '../../components/ui.tsx';
import { useResource, useTitle } from '../../lib/hooks.ts';
import type { Me } from '../../views.ts';
import { Marketplaces } from './marketplaces.tsx';
import { Members } from './members.tsx';
import { PublicAddress } from './public-address.tsx';
import { ThisKnode } from './this-knode.tsx';

/** Operating knode: where it is listed, how the internet reaches it, and who shares the tenant. */
export function SettingsPage() {
  useTitle('Settings');
  const me = useResource<Me>('/auth/me');
  return (
    <>
      <PageHeader title="Settings" subtitle="Your marketplaces, how the internet reaches this knode, and who works in your tenant." />
      <Marketplaces />
      <PublicAddress />
      {me.data ? <Members tenant={me.data.tenant_name} me={me.data.email} /> : <ErrorNotice error={me.error} />}
      <ThisKnode />
    </>
  );
}
