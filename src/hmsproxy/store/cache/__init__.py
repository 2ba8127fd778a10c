"""CachedStore: the store decorator that answers reads from memory and follows other instances' writes."""
