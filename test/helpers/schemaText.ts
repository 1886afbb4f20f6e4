// The schema a database holds, as text that two databases migrated alike give byte for byte: its tables
// and their columns, constraints and indexes, views, triggers, functions, aggregates and sequences, and on
// timescale its hypertables, continuous aggregates and policies. Read from the catalogs, so that it needs
// no pg_dump and lists what envmon made, not what PostgreSQL or TimescaleDB keep for themselves.
// `npm run schema` writes it to sql/schema.<engine>.sql; test/db/schema.test.ts compares.
import pg from 'pg';

const sections: [string, string][] = [
  ['tables', `
    select format('table %s (%s%s)', c.relname,
      string_agg(format(E'\\n  %s %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
        case when a.attnotnull then ' not null' else '' end,
        case when d.adbin is not null then case when a.attgenerated = 's' then ' generated always as (' || pg_get_expr(d.adbin, d.adrelid) || ') stored'
          else ' default ' || pg_get_expr(d.adbin, d.adrelid) end else '' end), ',' order by a.attnum),
      E'\\n')
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
    left join pg_attrdef d on d.adrelid = c.oid and d.adnum = a.attnum
    where n.nspname = 'public' and c.relkind in ('r', 'p')
    group by c.relname order by c.relname`],
  ['constraints', `
    select format('constraint %s on %s: %s', con.conname, c.relname, pg_get_constraintdef(con.oid))
    from pg_constraint con join pg_class c on c.oid = con.conrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' order by c.relname, con.conname`],
  ['indexes', `
    select pg_get_indexdef(i.indexrelid)
    from pg_index i join pg_class c on c.oid = i.indrelid join pg_namespace n on n.oid = c.relnamespace
    join pg_class ic on ic.oid = i.indexrelid
    where n.nspname = 'public' order by c.relname, ic.relname`],
  ['views', `
    select format(E'view %s as\\n%s', c.relname, pg_get_viewdef(c.oid, true))
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('v', 'm') order by c.relname`],
  ['triggers', `
    select pg_get_triggerdef(t.oid)
    from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and not t.tgisinternal order by c.relname, t.tgname`],
  ['functions', `
    select pg_get_functiondef(p.oid)
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'public' and p.prokind in ('f', 'p')
      and not exists (select 1 from pg_depend d where d.objid = p.oid and d.deptype = 'e')
    order by p.oid::regprocedure::text`],
  ['aggregates', `
    select format('aggregate %s: state %s, final %s, combine %s', p.oid::regprocedure, a.aggtransfn, a.aggfinalfn, a.aggcombinefn)
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace join pg_aggregate a on a.aggfnoid = p.oid
    where n.nspname = 'public' order by 1`],
  ['sequences', `
    select format('sequence %s', c.relname)
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind = 'S' order by c.relname`],
];

const timescaleSections: [string, string][] = [
  ['hypertables', `
    select format('hypertable %s by %s, chunks of %s%s', h.hypertable_name, d.column_name, d.time_interval,
      case when h.compression_enabled then ', compressed' else '' end)
    from timescaledb_information.hypertables h
    join timescaledb_information.dimensions d on d.hypertable_name = h.hypertable_name and d.dimension_number = 1
    where h.hypertable_schema = 'public' order by 1`],
  ['continuous aggregates', `
    select format(E'continuous aggregate %s (materialized only: %s) as\\n%s', view_name, materialized_only, view_definition)
    from timescaledb_information.continuous_aggregates where view_schema = 'public' order by view_name`],
  ['jobs', `
    select format('job %s on %s every %s: %s', proc_name, coalesce(hypertable_name, '-'), schedule_interval, coalesce(config::text, '{}'))
    from timescaledb_information.jobs where proc_schema <> '_timescaledb_internal' or hypertable_name is not null
    order by proc_name, hypertable_name, config::text`],
];

export async function schemaText(databaseUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const timescale = (await client.query(`select 1 from pg_extension where extname = 'timescaledb'`)).rowCount === 1;
    const parts: string[] = [];
    for (const [title, query] of [...sections, ...(timescale ? timescaleSections : [])]) {
      const rows = (await client.query<Record<string, string>>(query)).rows.map((row) => Object.values(row)[0]!.trimEnd());
      parts.push(`-- ${title}\n\n${rows.join('\n\n')}`);
    }
    return `-- The schema a fresh database has after \`envmon migrate\`, written by \`npm run schema\`.\n\n${parts.join('\n\n')}\n`;
  } finally {
    await client.end();
  }
}
