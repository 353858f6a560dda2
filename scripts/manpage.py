#!/usr/bin/env python3
"""Writes webimage(1) in roff from the tool's own parser (`webimage --experimental-dump-help`).

Usage: scripts/manpage.py WEBIMAGE_BINARY > webimage.1
"""
import json
import subprocess
import sys


def roff(text):
    """Escapes text for roff: backslashes, and a leading dot or quote."""
    text = (text or "").replace("\\", "\\e")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def synopsis_name(argument):
    names = argument.get("names") or []
    if argument["kind"] == "positional":
        return "\\fI" + argument.get("valueName", "value") + "\\fR" + ("..." if argument.get("isRepeating") else "")
    spelled = ", ".join(("--" if n["kind"] == "long" else "-") + n["name"] for n in names)
    if argument["kind"] == "option":
        spelled += " \\fI" + argument.get("valueName", "value") + "\\fR"
    return "\\fB" + spelled + "\\fR"


def command_section(command, path, out):
    visible = [a for a in command.get("arguments", []) if a.get("shouldDisplay", True)]
    name = " ".join(path)
    out.append(".SS " + roff(name))
    if command.get("abstract"):
        out.append(roff(command["abstract"]))
    if command.get("discussion"):
        out.append(".PP")
        out.append(roff(command["discussion"]))
    for argument in visible:
        if (argument.get("names") or [{}])[0].get("name") in ("help", "version"):
            continue
        out.append(".TP")
        out.append(synopsis_name(argument))
        out.append(roff(argument.get("abstract", "")))
    for sub in command.get("subcommands", []):
        if sub.get("shouldDisplay", True) and sub["commandName"] != "help":
            command_section(sub, path + [sub["commandName"]], out)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    dump = json.loads(subprocess.run([binary, "--experimental-dump-help"], check=True, capture_output=True).stdout)
    root = dump["command"]
    version = subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout.split("\n")[0]
    out = [
        '.TH WEBIMAGE 1 "" "%s" "User Commands"' % roff(version),
        ".SH NAME",
        "webimage \\- " + roff(root.get("abstract", "")),
        ".SH SYNOPSIS",
        "\\fBwebimage\\fR \\fIsubcommand\\fR [\\fIoptions\\fR]",
        ".SH DESCRIPTION",
        roff(root.get("discussion", root.get("abstract", ""))),
        ".SH COMMANDS",
    ]
    for sub in root.get("subcommands", []):
        if sub.get("shouldDisplay", True) and sub["commandName"] != "help":
            command_section(sub, ["webimage", sub["commandName"]], out)
    # The exit statuses, from the command that states them.
    fetch = next((s for s in root.get("subcommands", []) if s["commandName"] == "fetch"), {})
    statuses = [p for p in (fetch.get("discussion") or "").split("\n\n") if p.startswith("Exit status")]
    out += [".SH EXIT STATUS", roff(statuses[0] if statuses else "0 success, 1 some item failed, 2 usage error.")]
    out += [".SH SEE ALSO", "curl(1), wget(1), vipsthumbnail(1)"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
