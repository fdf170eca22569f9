"""Public cluster traces: Microsoft Philly, and the Helios, Acme and Alibaba traces."""
