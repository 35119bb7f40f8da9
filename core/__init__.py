"""What two or more Braid processes share: settings, schemas, messages, bus, lexical encoders."""
