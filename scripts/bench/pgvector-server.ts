/**
 * The PostgreSQL server the cluster benches (cluster-search.ts, cluster-embed.ts) start with `--pgvector`:
 * a private cluster of the copy of Debian's PostgreSQL that pgvector is built into (test/vendor/build-pgvector.sh,
 * started by test/helpers/postgres.ts: data in /dev/shm, fsync off), with an operator's memory settings instead
 * of the tests' 16 MB of shared buffers, and how to say in a bench's output what that server was.
 */

/** What an operator would give a server of this size (1 GB of shared buffers); `--settings=` replaces them. */
const BENCH_SETTINGS = ['shared_buffers=1GB', 'maintenance_work_mem=1GB', 'work_mem=64MB'];

/** The server settings asked by `--settings=name=value,name=value`, or BENCH_SETTINGS. */
export function benchSettings(args: readonly string[]): string[] {
  const given = args.find((arg) => arg.startsWith('--settings='));
  return given ? given.slice('--settings='.length).split(',').filter(Boolean) : BENCH_SETTINGS;
}

/** The server's version, pgvector's where it has it, and the memory and durability settings it runs with. */
export async function describeServer(url: string): Promise<string> {
  const client = new Bun.SQL(url, { max: 1 });
  try {
    const [version] = await client.unsafe('SHOW server_version');
    const [vector] = await client.unsafe(`SELECT default_version FROM pg_available_extensions WHERE name = 'vector'`);
    const settings = await client.unsafe(
      `SELECT name, current_setting(name) AS value FROM pg_settings
       WHERE name IN ('shared_buffers', 'work_mem', 'maintenance_work_mem', 'effective_cache_size', 'fsync', 'synchronous_commit')
       ORDER BY name`,
    );
    const shown = settings.map((row: { name: string; value: string }) => `${row.name}=${row.value}`);
    return `PostgreSQL ${version.server_version}, pgvector ${vector?.default_version ?? 'absent'}, ${shown.join(' ')}`;
  } finally {
    await client.close();
  }
}
