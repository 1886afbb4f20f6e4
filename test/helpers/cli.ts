import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const envmonBin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/envmon.js');

export type CliResult = { code: number | null; stdout: string; stderr: string };

/** Runs the real `envmon` command with only the given settings (plus PATH), as an operator would. */
export function runCli(args: string[], settings: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [envmonBin, ...args], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...settings },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export const lines = (text: string) => text.split('\n').filter((line) => line !== '');
