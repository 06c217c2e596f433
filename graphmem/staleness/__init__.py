"""Staying true to the code: items anchored to code by content hashes, marked stale when it changes.

update: the tracker and `update_stale` (what a commit, a range or the work tree changed);
hook: the lean runtime the git hooks start after every commit (through the owner, else direct);
install: the git hooks themselves (install, remove, chain with existing hooks);
gitimport: `graphmem import-git`, items from a repository's history.
"""
