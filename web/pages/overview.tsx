import { useEffect, useState } from 'preact/hooks';
import { apiPath, get } from '../api.ts';
import { Loading, PageHeader } from '../components/ui.tsx';
import { count, plural } from '../lib/format.ts';
import { useFirstRender, useResource, useTitle } from '../lib/hooks.ts';
import type { Dataset, EndpointSummary, Model, Page, PolicySummary, Usage } from '../views.ts';

/** Where a person stands on the way from a folder to an answer, with the next step one link away. */
export function Overview() {
  useTitle('Overview');
  const datasets = useResource<Dataset[]>('/datasets/');
  const models = useResource<Model[]>('/models/');
  const endpoints = useResource<EndpointSummary[]>('/endpoints/');
  const policies = useResource<PolicySummary[]>('/policies');
  const ready = datasets.data && models.data && endpoints.data && policies.data;
  if (!ready) return <Loading what="your overview" />;
  return (
    <Steps datasets={datasets.data ?? []} models={models.data ?? []} endpoints={endpoints.data ?? []} policies={policies.data ?? []} />
  );
}

function Steps(props: { datasets: Dataset[]; models: Model[]; endpoints: EndpointSummary[]; policies: PolicySummary[] }) {
  useFirstRender();
  const { datasets, models, endpoints } = props;
  const indexed = datasets.reduce((sum, dataset) => sum + dataset.ingestion.files_indexed, 0);
  const first = endpoints[0];
  const withPolicies = props.policies.length > 0;
  const asked = useAsked(endpoints);
  const steps = [
    {
      done: datasets.length > 0,
      title: 'Connect a folder',
      text:
        datasets.length > 0
          ? `${plural(datasets.length, 'dataset')}, ${count(indexed)} files indexed.`
          : 'Pick a folder of PDF, Word, HTML, Markdown or text files (spreadsheets, CSV and JSON too, when the dataset names them): knode indexes it and keeps it up to date.',
      href: datasets.length > 0 ? '/datasets' : '/datasets/new',
      action: datasets.length > 0 ? 'See datasets' : 'Add a folder',
    },
    {
      done: models.length > 0,
      title: 'Add a model',
      text:
        models.length > 0
          ? `${plural(models.length, 'model')}.`
          : 'Any OpenAI-compatible server (Ollama, vLLM, LM Studio, OpenAI) or a GGUF file on this machine.',
      href: models.length > 0 ? '/models' : '/models/new',
      action: models.length > 0 ? 'See models' : 'Add a model',
    },
    {
      done: endpoints.length > 0,
      title: 'Make an endpoint',
      text:
        endpoints.length > 0
          ? `${plural(endpoints.length, 'endpoint')}.`
          : 'An endpoint searches a dataset and answers with a model: what others will query.',
      href: endpoints.length > 0 ? '/endpoints' : '/endpoints/new',
      action: endpoints.length > 0 ? 'See endpoints' : 'Make an endpoint',
    },
    {
      done: asked !== undefined,
      title: 'Ask it a question',
      text: asked
        ? `${asked.name} was asked ${plural(asked.questions, 'question')}; ask more in the playground.`
        : 'The playground queries an endpoint as you, its owner, and streams the answer with its sources.',
      href: first ? `/endpoints/${first.slug}` : '/endpoints/new',
      action: 'Open the playground',
    },
    {
      done: withPolicies,
      title: 'Decide who may ask',
      text: 'Policies: who may query (by e-mail), how often, and at what price.',
      href: first ? `/endpoints/${first.slug}/policies` : '/endpoints/new',
      action: 'Set policies',
    },
    {
      done: endpoints.some((endpoint) => endpoint.published),
      title: 'Publish it',
      text: 'List the endpoint on SyftHub, whose users query it with their satellite tokens.',
      href: first ? `/endpoints/${first.slug}/publish` : '/endpoints/new',
      action: 'Publish',
    },
  ];
  return (
    <>
      <PageHeader title="Overview" subtitle="From a folder of documents to answers others can ask for, in six steps." />
      <ol class="steps">
        {steps.map((step, index) => (
          <li key={step.title} class={step.done ? 'step done' : 'step'}>
            <span class="step-mark" aria-hidden="true">
              {step.done ? '✓' : ''}
            </span>
            <div class="step-body">
              <h2>
                {step.title}
                {step.done && <span class="visually-hidden"> (done)</span>}
              </h2>
              <p>{step.text}</p>
            </div>
            <a class={index === steps.findIndex((candidate) => !candidate.done) ? 'button' : 'button secondary'} href={step.href}>
              {step.action}
            </a>
          </li>
        ))}
      </ol>
    </>
  );
}

/**
 * The first endpoint that was asked something (by anyone, the playground included), from each endpoint's usage
 * (one row asked for: its total is the count); undefined while none was. At most the first 20 endpoints are asked.
 */
function useAsked(endpoints: EndpointSummary[]): { name: string; questions: number } | undefined {
  const [asked, setAsked] = useState<{ name: string; questions: number } | undefined>(undefined);
  const slugs = endpoints
    .slice(0, 20)
    .map((endpoint) => endpoint.slug)
    .join('\n');
  useEffect(() => {
    let current = true;
    const pages = endpoints.slice(0, 20).map((endpoint) =>
      get<Page<Usage>>(apiPath`/endpoints/${endpoint.slug}/usage?skip=0&limit=1`)
        .then((page) => ({ name: endpoint.name, questions: page.total }))
        .catch(() => ({ name: endpoint.name, questions: 0 })),
    );
    void Promise.all(pages).then((found) => {
      if (current) setAsked(found.find((entry) => entry.questions > 0));
    });
    return () => {
      current = false;
    };
  }, [slugs]);
  return asked;
}
