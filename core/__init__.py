"""What two or more Braid processes share: settings, schemas, messages, the bus, lexical encoders."""
