import { pino } from 'pino';
import { ConfigError, parseConfig } from './config.js';
import { EmbeddedPostgresError } from './db/embedded.js';
import { EngineError } from './db/engine.js';
import { MigrationError } from './db/migrate.js';
import { StartupError, openDatabase } from './db/open.js';
import { flagCommand } from './cli/flag.js';
import { importCommand } from './cli/import.js';
import { ContentImportError } from './content/importContent.js';
import { keysCommand } from './cli/keys.js';
import { readingsCommand } from './cli/readings.js';
import { RollupsDifferError, rollupsCommand } from './cli/rollups.js';
import { isEmpty, loadDemo } from './cli/demo.js';
import { serveCommand } from './cli/serve.js';
import { SnapshotsDifferError, snapshotsCommand } from './cli/snapshots.js';
import { qcCommand } from './cli/qc.js';
import { stationsCommand } from './cli/stations.js';
import { UsageError, usage } from './cli/usage.js';
import { PortInUseError } from './http/server.js';

const commands = new Set(['serve', 'migrate', 'demo', 'stations', 'keys', 'flag', 'readings', 'rollups', 'snapshots', 'qc', 'import']);

/** Errors that an operator fixes from one line; anything else is a defect and keeps its stack. */
const oneLineErrors = [ContentImportError, ConfigError, EmbeddedPostgresError, EngineError, MigrationError, PortInUseError, RollupsDifferError, SnapshotsDifferError, StartupError, UsageError];

async function run(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    console.log(usage);
    return command === undefined ? 2 : 0;
  }
  if (!commands.has(command)) throw new UsageError(`unknown command '${command}'`);

  const config = parseConfig(process.env);
  const log = pino({ level: config.logLevel, base: { service: 'envmon' } }, pino.destination(2));
  const out = (line: string) => console.log(line);
  const { db, close } = await openDatabase(config, log);
  try {
    switch (command) {
      case 'serve':
        await serveCommand(config, db, log, args);
        break;
      case 'migrate':
        out(`database is current (engine: ${db.engine})`);
        break;
      case 'demo': {
        if (!(await isEmpty(db))) throw new UsageError('the database already holds stations; demo data loads only into an empty database');
        const loaded = await loadDemo(db);
        out(`demo loaded: ${loaded.stations} stations, ${loaded.readings} readings`);
        break;
      }
      case 'stations':
        await stationsCommand(db, args, out);
        break;
      case 'keys':
        await keysCommand(db, args, out);
        break;
      case 'flag':
        await flagCommand(db, args, out);
        break;
      case 'readings':
        await readingsCommand(db, args, out);
        break;
      case 'rollups':
        await rollupsCommand(db, args, out);
        break;
      case 'snapshots':
        await snapshotsCommand(config, db, args, out);
        break;
      case 'qc':
        await qcCommand(db, args, out);
        break;
      case 'import':
        await importCommand(db, args, out);
        break;
    }
  } finally {
    await close();
  }
  return 0;
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (oneLineErrors.some((type) => error instanceof type)) {
      const hint = error instanceof UsageError ? ` (run 'envmon help' for usage)` : '';
      console.error(`envmon: ${(error as Error).message}${hint}`);
    } else {
      console.error('envmon: unexpected failure', error);
    }
    process.exitCode = error instanceof UsageError || error instanceof ConfigError || error instanceof ContentImportError ? 2 : 1;
  },
);
