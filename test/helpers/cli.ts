import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const envmonBin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/envmon.js');

export type CliResult = { code: number | null; stdout: string; stderr: string };

/** Runs the real `envmon` command with only the given settings (plus PATH), as an operator would. */
export function runCli(args: string[], settings: Record<string, string>): Promise<CliResult> {
  return runCommand(process.execPath, [envmonBin, ...args], { LOG_LEVEL: 'silent', ...settings });
}

/** Runs a program (a real client: curl, GDAL) with only PATH and `env`; resolves with its exit code and output. */
export function runCommand(command: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export const lines = (text: string) => text.split('\n').filter((line) => line !== '');

export type ServeProcess = { url: string; child: ChildProcess; stderr: () => string; stop: () => Promise<number | null> };

/**
 * Starts the real `envmon serve [args]` on a free port with only the given settings; resolves once it
 * listens. `bin` is another checkout's command (a bench comparing two releases).
 */
export async function spawnServe(settings: Record<string, string>, args: string[] = [], bin = envmonBin): Promise<ServeProcess> {
  const child = spawn(process.execPath, [bin, 'serve', ...args], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', PORT: '0', ...settings },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (chunk) => {
      stderr += chunk;
      const match = /on (http:\/\/[\d.:]+) /.exec(stderr);
      if (match) resolve(match[1]!);
    });
    void exited.then(() => reject(new Error(`envmon serve exited: ${stderr}`)));
  });
  return {
    url,
    child,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
