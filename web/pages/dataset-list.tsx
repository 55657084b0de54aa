import { DatasetStatus, isBusy } from '../components/dataset-status.tsx';
import { Empty, ErrorNotice, Loading, PageHeader, ProgressBar } from '../components/ui.tsx';
import { datasetSource } from '../lib/datasets.ts';
import { count } from '../lib/format.ts';
import { useFirstRender, usePoll, useResource, useTitle } from '../lib/hooks.ts';
import type { Dataset } from '../views.ts';

export function DatasetList() {
  useTitle('Datasets');
  const datasets = useResource<Dataset[]>('/datasets/');
  usePoll(datasets.reload, 3000, datasets.data?.some(isBusy) ?? false);
  return (
    <>
      <PageHeader
        title="Datasets"
        subtitle="Folders knode keeps indexed: searched by your endpoints."
        actions={
          <a class="button" href="/datasets/new">
            Add a folder
          </a>
        }
      />
      <ErrorNotice error={datasets.error} />
      {datasets.loading && <Loading what="datasets" />}
      {datasets.data && <Table datasets={datasets.data} />}
    </>
  );
}

function Table(props: { datasets: Dataset[] }) {
  useFirstRender();
  if (props.datasets.length === 0) {
    return (
      <Empty>
        <p>No dataset yet. Pick a folder of documents and knode indexes it.</p>
        <a class="button" href="/datasets/new">
          Add a folder
        </a>
      </Empty>
    );
  }
  return (
    <table class="table">
      <caption class="visually-hidden">Your datasets</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Folder</th>
          <th scope="col">State</th>
          <th scope="col">Indexed</th>
          <th scope="col" class="num">
            Chunks
          </th>
        </tr>
      </thead>
      <tbody>
        {props.datasets.map((dataset) => {
          const { ingestion } = dataset;
          return (
            <tr key={dataset.id}>
              <td>
                <a href={`/datasets/${dataset.id}`}>{dataset.name}</a>
              </td>
              <td class="path">{datasetSource(dataset)}</td>
              <td>
                <DatasetStatus dataset={dataset} />
              </td>
              <td class="progress-cell">
                <ProgressBar
                  value={ingestion.files_indexed}
                  failed={ingestion.files_failed}
                  max={ingestion.files_total}
                  label={`${dataset.name}: files indexed`}
                />
                <span class="small-text">
                  {count(ingestion.files_indexed)} of {count(ingestion.files_total)} files
                </span>
              </td>
              <td class="num">{count(ingestion.chunks)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
