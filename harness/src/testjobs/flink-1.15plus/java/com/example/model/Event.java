package com.example.model;

/** The element type of {@code org.flinkjobgraph.testjobs.ScopeJob}: named by its job graph. */
public class Event {
    public long id;
    public Detail detail;

    public Event() {}

    public static Event of(long id) {
        Event e = new Event();
        e.id = id;
        e.detail = new Detail();
        return e;
    }
}
