#!/bin/sh
exec /home/USER/payhook/payhook -c /home/USER/payhook/payhook.conf
