import { ErrorNotice } from '../../components/ui.tsx';
import { bytes } from '../../lib/format.ts';
import { useResource } from '../../lib/hooks.ts';
import type { Storage } from '../../views.ts';

/** How this knode runs (the admin key, or development mode), where its data is, and what each dataset takes. */
export function ThisKnode() {
  const storage = useResource<Storage>('/settings/storage');
  const data = storage.data;
  return (
    <section class="card" aria-labelledby="knode-title">
      <h2 id="knode-title">This knode</h2>
      <ErrorNotice error={storage.error} />
      {data && (
        <>
          <p data-settings="mode">
            {data.development_mode
              ? 'Development mode (no SVC_ADMIN_API_KEY): the operator settings are open to requests made on this machine, and to nobody else.'
              : 'An admin key is set (SVC_ADMIN_API_KEY): the operator settings need it; your login manages your tenant.'}
          </p>
          {data.data_dir !== null && (
            <p>
              Data folder <span class="path">{data.data_dir}</span>
              {data.database_bytes !== null && `, database ${bytes(data.database_bytes)}`}.
            </p>
          )}
          {data.datasets.length > 0 && (
            <table class="table" data-settings="storage">
              <caption>Disk use of your datasets' indexes</caption>
              <thead>
                <tr>
                  <th scope="col">Dataset</th>
                  <th scope="col" class="num">
                    Size
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.datasets.map((dataset) => (
                  <tr key={dataset.id}>
                    <td>
                      <a href={`/datasets/${dataset.id}`}>{dataset.name}</a>
                    </td>
                    <td class="num">{bytes(dataset.bytes)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}
