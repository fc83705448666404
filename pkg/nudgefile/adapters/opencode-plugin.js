// turnwatch's plugin for opencode (docs/nudges.md). The sidecar puts it at
// /run/turnwatch/opencode-plugin.js; a template loads it with
//   OPENCODE_CONFIG_CONTENT={..., "plugin": ["/run/turnwatch/opencode-plugin.js"]}
// It asks turnwatch-hook (--cli adapter: JSON on stdin and stdout) after
// each tool call for the nudges the model has not seen, and appends them to
// the tool's output. `opencode run --format json` prints a call only once
// it ran, so the sidecar has no verdict before a call runs: before each
// call the plugin asks without waiting, which refuses only the calls made
// after a trip, and then ends the turn before the next model request.
// Only node builtins; every export is a function (opencode skips a plugin
// that exports anything else).
import { execFile } from "node:child_process";

const DIR = process.env.TURNWATCH_NUDGE_DIR || "/run/turnwatch";
const HOOK = DIR + "/bin/turnwatch-hook";

function hook(event) {
  return new Promise((resolve) => {
    const child = execFile(HOOK, ["--cli", "adapter"], { encoding: "utf8", timeout: 10000 }, (err, stdout) => {
      try {
        resolve(err ? {} : JSON.parse(stdout || "{}"));
      } catch {
        resolve({});
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(event));
  });
}

export const TurnwatchPlugin = async () => {
  let stopped = "";
  return {
    // A throw here refuses the call (the model reads it as the tool's error).
    "tool.execute.before": async (input, output) => {
      if (!stopped) {
        const r = await hook({ event: "pre", nowait: true, call: input.callID, tool: input.tool, args: output && output.args });
        if (r.refuse) stopped = r.message || "turnwatch refused this call";
      }
      if (stopped) throw new Error(stopped);
    },
    // Called before every model request: a throw ends the turn.
    "chat.params": async () => {
      if (stopped) throw new Error(stopped);
    },
    // Never throw here: opencode would put the error in place of the output.
    "tool.execute.after": async (input, output) => {
      try {
        const r = await hook({ event: "post", call: input.callID, tool: input.tool });
        if (r.context) output.output = (output.output ?? "") + "\n\n" + r.context;
      } catch {}
    },
  };
};
