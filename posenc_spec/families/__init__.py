"""The encoding families, each a package holding everything its specification needs."""
